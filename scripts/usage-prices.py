#!/usr/bin/env python3
"""Regenerates crates/core/data/model-prices.json, the price table the studio estimates costs with
(docs/cli.md, "The usage object"), from LiteLLM's MIT-licensed model price table.

    pip download litellm==VERSION --no-deps -d /tmp/litellm
    scripts/usage-prices.py /tmp/litellm/litellm-VERSION-*.whl

Keeps the chat and responses models of the providers behind the engine's agents (Anthropic for
Claude Code, OpenAI for Codex, Google for the Gemini CLI; Cursor reports no usage) named without a
provider prefix, and only the four per-token prices the studio uses. The licence notice of the table goes to crates/core/data/LITELLM-LICENSE.
"""
import json
import re
import sys
import zipfile
from pathlib import Path

TABLE = "litellm/model_prices_and_context_window_backup.json"
FIELDS = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    wheel = Path(sys.argv[1])
    version = re.match(r"litellm-([^-]+)-", wheel.name)
    if not version:
        sys.exit(f"{wheel.name}: not a litellm wheel")
    data = Path(__file__).resolve().parent.parent / "crates/core/data"
    with zipfile.ZipFile(wheel) as archive:
        table = json.loads(archive.read(TABLE))
        licence = next(n for n in archive.namelist() if n.endswith("licenses/LICENSE"))
        (data / "LITELLM-LICENSE").write_bytes(archive.read(licence))
    models = {}
    for name, entry in sorted(table.items()):
        if "/" in name or not isinstance(entry, dict):
            continue
        if entry.get("mode") not in ("chat", "responses"):
            continue
        provider = entry.get("litellm_provider", "")
        if provider not in ("anthropic", "openai") and not name.startswith("gemini"):
            continue
        prices = {short: entry[long] for long, short in FIELDS.items() if isinstance(entry.get(long), (int, float))}
        if "input" in prices and "output" in prices:
            models[name] = prices
    out = {
        "source": "LiteLLM model_prices_and_context_window.json (MIT licence: LITELLM-LICENSE)",
        "litellm_version": version.group(1),
        "unit": "USD per token",
        "models": models,
    }
    lines = ",\n".join(f"  {json.dumps(name)}: {json.dumps(prices)}" for name, prices in models.items())
    head = json.dumps({k: v for k, v in out.items() if k != "models"}, indent=2)[:-2]
    (data / "model-prices.json").write_text(f'{head},\n  "models": {{\n{lines}\n  }}\n}}\n')
    print(f"{len(models)} models from litellm {version.group(1)}")


if __name__ == "__main__":
    main()
