"""`zstudio mcp` driven by the official Python MCP SDK's stdio client (`mcp` from PyPI, pinned in
scripts/setup.sh), as a coding agent written in Python would drive it.

Run by crates/cli/tests/serve/mcp_python.rs, which fills the workspaces with the test agent and
writes what it expects to a JSON file:

    python drive.py --zstudio BIN --expected FILE \
        --workspace W --db D --data-home H \
        --slow-workspace W2 --slow-db D2 --slow-data-home H2

or, for a host's workspace (`--remote`) or a bucket (`--source`), by crates/cli/tests/remote/mcp.rs
and crates/cli/tests/cloud/mcp.rs:

    python drive.py --elsewhere --expected FILE

The expected file holds `sessions` (what `zstudio sessions --json` printed for W and D),
`large_run` and `large_output` (a run's id and its whole output), `evil_session` and `evil_run`
(the injection fixture's). W's agent `trip` is trusted and `stranger` is not; W2's `trip` is
trusted and slow. Every check that fails prints what was expected and what came, and the script
exits 1; 0 when all passed. With `--elsewhere` the expected file also holds the server's `argv`
and `env`, whether it takes `--allow-runs` (`runs`), and either a run's whole output (`large_run`,
`large_output`) or the `read_output` arguments of a session's folder (`output_of`) and a text its
pages hold (`output_holds`); with `evil_session` and `evil_run` the injection fixture and the
malformed calls are checked too, and with `slow_argv` (a workspace whose `trip` is slow) a stop.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

READ_TOOLS = [
    "list_sessions",
    "get_session",
    "read_output",
    "search",
    "get_logs",
    "compare_runs",
    "list_agents",
    "wait_run",
]
WRITE_TOOLS = ["start_run", "rerun_node", "stop_run"]
PAGE_BYTES = 16 * 1024
# What session text must never bring in raw: ESC, BEL, the right-to-left override, a zero-width space.
HIDDEN = ["\x1b", "\x07", "\u202e", "\u200b"]
# The whole run, however loaded the machine.
DEADLINE_SECONDS = 300


class Mismatch(Exception):
    """A check that failed: what was expected and what came."""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def failure_in(error: BaseException) -> Mismatch | TimeoutError | None:
    """The failed check or the deadline an error is or holds (anyio's task groups wrap what ends
    them in exception groups)."""
    if isinstance(error, Mismatch | TimeoutError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = failure_in(inner)
            if found is not None:
                return found
    return None


def step(text: str) -> None:
    print(f"-- {text}", flush=True)


class Place:
    """How the server is started: its command line (without `--allow-runs`) and variables."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv = argv
        self.env = env

    @classmethod
    def local(cls, zstudio: str, workspace: str, db: str, data_home: str) -> Place:
        # The client passes the server only a safe few of its own variables; the keeper's folders
        # are the place's.
        return cls([zstudio, "mcp", "--workspace", workspace, "--db", db], {"XDG_DATA_HOME": data_home})

    def parameters(self, allow_runs: bool) -> StdioServerParameters:
        args = self.argv[1:] + (["--allow-runs"] if allow_runs else [])
        return StdioServerParameters(command=self.argv[0], args=args, env=self.env)


@asynccontextmanager
async def connect(place: Place, allow_runs: bool) -> AsyncIterator[ClientSession]:
    async with stdio_client(place.parameters(allow_runs)) as (read, write):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            name = initialized.server_info.name
            check(name == "zibby-studio", f"the server calls itself {name!r}, not 'zibby-studio'")
            yield session


def structured(result: Any) -> dict[str, Any]:
    content = result.structured_content
    check(isinstance(content, dict), f"no structured content: {result!r}")
    return content


async def answer(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The structured result of a call that succeeded."""
    result = await session.call_tool(tool, arguments)
    check(not result.is_error, f"{tool} {arguments} failed: {result.structured_content or result.content}")
    return structured(result)


async def refusal(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """The error code and message of a call answered with a tool error."""
    result = await session.call_tool(tool, arguments)
    check(result.is_error is True, f"{tool} {arguments} was not refused: {result.structured_content}")
    error = structured(result).get("error") or {}
    code, message = error.get("code"), error.get("message")
    check(isinstance(code, str) and code != "", f"{tool} {arguments}: an error without a code: {error}")
    check(isinstance(message, str) and message != "", f"{tool} {arguments}: an error without a message: {error}")
    return code, message


def texts(result: Any) -> list[str]:
    """Every string of a result: its structured content's keys and values, and its text content."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                out.append(key)
                walk(item)

    walk(result.structured_content)
    for content in result.content:
        text = getattr(content, "text", None)
        check(isinstance(text, str), f"a content that is not text: {content!r}")
        out.append(text)
    return out


async def tool_names(session: ClientSession) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        listed = await session.list_tools(params=params)
        names.extend(tool.name for tool in listed.tools)
        cursor = listed.next_cursor
        if not cursor:
            return names


async def write_tools_absent_without_allow_runs(place: Place) -> None:
    step("the write tools are absent without --allow-runs")
    async with connect(place, allow_runs=False) as session:
        names = await tool_names(session)
        check(names == READ_TOOLS, f"tools without --allow-runs: {names}, expected {READ_TOOLS}")
        try:
            result = await session.call_tool("start_run", {"agent": "trip", "prompt": "x"})
        except MCPError:
            pass
        else:
            raise Mismatch(f"start_run without --allow-runs was answered: {result!r}")
    async with connect(place, allow_runs=True) as session:
        names = await tool_names(session)
        expected = READ_TOOLS + WRITE_TOOLS
        check(names == expected, f"tools with --allow-runs: {names}, expected {expected}")


async def read_tools_alone(place: Place) -> None:
    step("a read-only server lists the read tools alone")
    async with connect(place, allow_runs=False) as session:
        names = await tool_names(session)
        check(names == READ_TOOLS, f"tools: {names}, expected {READ_TOOLS}")


async def list_sessions_is_the_cli_listing(session: ClientSession, cli: list[dict[str, Any]]) -> None:
    step(f"list_sessions equals `zstudio sessions --json` ({len(cli)} sessions)")
    check(len(cli) >= 2, f"the fixture has {len(cli)} sessions")
    expected = [(row["id"], row["status"]) for row in cli]
    listed = await answer(session, "list_sessions", {"limit": 200})
    got = [(row["id"], row["status"]) for row in listed["sessions"]]
    check(got == expected, f"list_sessions gave {got}, `zstudio sessions --json` {expected}")
    check(listed.get("next_cursor") is None, f"one page holds them all: {listed.get('next_cursor')!r}")
    # A page at a time: the same sessions in the same order.
    paged: list[tuple[str, str]] = []
    cursor = None
    while True:
        arguments: dict[str, Any] = {"limit": 1}
        if cursor is not None:
            arguments["cursor"] = cursor
        page = await answer(session, "list_sessions", arguments)
        paged.extend((row["id"], row["status"]) for row in page["sessions"])
        cursor = page.get("next_cursor")
        if cursor is None:
            break
        check(len(paged) <= len(expected), "the pages never end")
    check(paged == expected, f"list_sessions a page at a time gave {paged}, expected {expected}")


async def pages_of(session: ClientSession, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    """Every page `read_output` gives for `arguments`, each checked to be at most a page, and the
    last page's `total_bytes`."""
    pages: list[str] = []
    cursor = None
    while True:
        page = await answer(session, "read_output", {**arguments, **({"cursor": cursor} if cursor else {})})
        text = page["text"]
        size = len(text.encode("utf-8"))
        check(size <= PAGE_BYTES, f"page {len(pages)} holds {size} bytes, more than {PAGE_BYTES}")
        pages.append(text)
        cursor = page.get("next_cursor")
        if cursor is None:
            return pages, page.get("total_bytes")
        check(len(pages) < 10_000, "the pages never end")


async def output_is_paged(session: ClientSession, run: str, output: str) -> None:
    step(f"read_output pages of at most {PAGE_BYTES} bytes join to the output ({len(output.encode())} bytes)")
    joined, total = await pages_of(session, {"id": run})
    pages = len(joined)
    expected_bytes = len(output.encode("utf-8"))
    check(pages >= expected_bytes // PAGE_BYTES, f"{pages} pages for {expected_bytes} bytes")
    whole = "".join(joined)
    if whole != output:
        at = next((i for i, (a, b) in enumerate(zip(whole, output)) if a != b), min(len(whole), len(output)))
        raise Mismatch(
            f"the {pages} pages joined ({len(whole)} characters) differ from the output ({len(output)}) "
            f"at character {at}: {whole[at:at + 60]!r} against {output[at:at + 60]!r}"
        )
    check(total == expected_bytes, f"total_bytes is {total}, the output {expected_bytes}")


async def folder_output_is_paged(session: ClientSession, arguments: dict[str, Any], holds: str) -> None:
    step(f"read_output of {arguments} in pages of at most {PAGE_BYTES} bytes, holding {holds!r}")
    pages, _ = await pages_of(session, arguments)
    whole = "".join(pages)
    check(holds in whole, f"the {len(pages)} pages ({len(whole)} characters) do not hold {holds!r}")


async def injection_is_inert(session: ClientSession, evil_session: str, evil_run: str, other_run: str) -> None:
    step("the injection fixture comes back escaped")
    strings: list[str] = []
    for tool, arguments in [
        ("read_output", {"id": evil_session}),
        ("read_output", {"id": evil_run}),
        ("get_session", {"id": evil_session}),
        ("search", {"text": "ignore previous instructions"}),
        ("get_logs", {"id": evil_session}),
        ("compare_runs", {"a": evil_run, "b": other_run}),
        ("list_sessions", {"limit": 200}),
    ]:
        result = await session.call_tool(tool, arguments)
        check(not result.is_error, f"{tool} {arguments} failed: {result.structured_content}")
        strings.extend(texts(result))
    check(
        any("ignore previous instructions" in s for s in strings),
        "the fixture's text did not come back at all",
    )
    check(any("\\u001b" in s for s in strings), "the fixture's ESC did not come back escaped as \\u001b")
    check(any("\\u202e" in s for s in strings), "the fixture's U+202E did not come back escaped as \\u202e")
    for text in strings:
        for hidden in HIDDEN:
            check(hidden not in text, f"a raw {hidden!r} came through: {text[:200]!r}")
    listed = await session.list_tools()
    described = json.dumps([tool.model_dump(mode="json") for tool in listed.tools])
    check("ignore previous" not in described, "session text in the tools' descriptions")


async def malformed_calls_are_answered(session: ClientSession, large_run: str, evil_run: str) -> None:
    step("1,000 malformed calls are each answered with an error, and the server goes on")
    first = await answer(session, "read_output", {"id": large_run})
    another_runs_cursor = first["next_cursor"]
    # (tool, arguments, a tool error or a protocol error)
    malformed: list[tuple[str, dict[str, Any], bool]] = [
        ("format_disk", {}, False),
        ("no_such_tool", {"id": "x"}, False),
        ("get_session", {"id": "../../etc"}, True),
        ("get_session", {"id": ".."}, True),
        ("get_session", {"id": "no_such_session"}, True),
        ("get_session", {}, True),
        ("get_session", {"id": 42}, True),
        ("get_session", {"id": "a", "extra": True}, True),
        ("read_output", {"id": "../" + large_run}, True),
        ("read_output", {"id": evil_run, "cursor": another_runs_cursor}, True),
        ("read_output", {"id": large_run, "cursor": "x:y:z"}, True),
        ("read_output", {"id": large_run, "node": "nowhere"}, True),
        ("read_output", {"id": large_run, "node": "../etc"}, True),
        ("read_output", {"id": large_run, "stream": "stdin"}, True),
        ("wait_run", {"id": large_run, "timeout_seconds": 61}, True),
        ("wait_run", {"id": "..", "timeout_seconds": 1}, True),
        ("list_sessions", {"cursor": "sessions:abc"}, True),
        ("list_sessions", {"status": "exploded"}, True),
        ("list_sessions", {"since": "yesterday"}, True),
        ("list_sessions", {"limit": 0}, True),
        ("search", {"text": ""}, True),
        ("compare_runs", {"a": "..", "b": large_run}, True),
        ("get_logs", {"id": "a/../../b"}, True),
        ("get_logs", {"id": "\x1b[2J"}, True),
    ]
    answered = 0
    for i in range(1_000):
        tool, arguments, tool_error = malformed[i % len(malformed)]
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as error:
            check(not tool_error, f"{tool} {arguments}: a protocol error ({error.code} {error.message}), not a tool error")
            check(error.message != "", f"{tool} {arguments}: a protocol error without a message")
        else:
            check(tool_error, f"{tool} {arguments}: answered as a call ({result!r}), not a protocol error")
            await refusal_of(result, tool, arguments)
        answered += 1
    check(answered == 1_000, f"{answered} of 1,000 answered")
    listed = await answer(session, "list_sessions", {})
    check(len(listed["sessions"]) > 0, "the server answers no more after the malformed calls")
    code, _ = await refusal(session, "get_session", {"id": "../../etc"})
    check(code == "invalid_session_id", f"an id with `..` refused as {code}, not invalid_session_id")


async def refusal_of(result: Any, tool: str, arguments: dict[str, Any]) -> None:
    check(result.is_error is True, f"{tool} {arguments} was not refused: {result.structured_content}")
    error = structured(result).get("error") or {}
    check(bool(error.get("code")) and bool(error.get("message")), f"{tool} {arguments}: {error}")


async def runs_start_wait_and_refuse(place: Place) -> None:
    step("start_run of a trusted agent, wait_run to its end; an untrusted agent refused")
    async with connect(place, allow_runs=True) as session:
        agents = await answer(session, "list_agents", {})
        trusted = {agent["name"]: agent["trusted"] for agent in agents["agents"]}
        check(trusted == {"trip": True, "stranger": False}, f"list_agents: {trusted}")
        started = await answer(session, "start_run", {"agent": "trip", "prompt": "Kyoto"})
        run = started["run_id"]
        ended = await answer(session, "wait_run", {"id": run, "timeout_seconds": 60})
        check(ended.get("ended") is True, f"the run did not end within 60 s: {ended}")
        check(ended.get("status") == "success", f"the run ended {ended.get('status')!r}, not success: {ended}")
        check(ended.get("origin") == "mcp", f"the run's origin is {ended.get('origin')!r}, not mcp")
        before = (await answer(session, "list_sessions", {"limit": 200}))["matched"]
        code, message = await refusal(session, "start_run", {"agent": "stranger", "prompt": "x"})
        check(code == "agents_untrusted", f"an untrusted agent refused as {code}: {message}")
        after = (await answer(session, "list_sessions", {"limit": 200}))["matched"]
        check(before == after, f"the untrusted agent ran: {before} sessions, then {after}")


async def slow_run_stopped_ends_cancelled(place: Place) -> None:
    step("stop_run of a slow run ends cancelled")
    async with connect(place, allow_runs=True) as session:
        started = await answer(session, "start_run", {"agent": "trip", "prompt": "slow"})
        stopping = await answer(session, "stop_run", {"id": started["session_id"]})
        check(stopping.get("run_id") == started["run_id"], f"stop_run stopped {stopping}, not {started}")
        ended = await answer(session, "wait_run", {"id": started["run_id"], "timeout_seconds": 60})
        check(
            ended.get("ended") is True and ended.get("status") == "cancelled",
            f"the stopped run: {ended}, expected ended and cancelled",
        )


async def drive(arguments: argparse.Namespace) -> None:
    with open(arguments.expected, encoding="utf-8") as file:
        expected = json.load(file)
    if arguments.elsewhere:
        await drive_elsewhere(expected)
        return
    place = Place.local(arguments.zstudio, arguments.workspace, arguments.db, arguments.data_home)
    slow = Place.local(arguments.zstudio, arguments.slow_workspace, arguments.slow_db, arguments.slow_data_home)
    with anyio.fail_after(DEADLINE_SECONDS):
        await write_tools_absent_without_allow_runs(place)
        async with connect(place, allow_runs=False) as session:
            await list_sessions_is_the_cli_listing(session, expected["sessions"])
            await output_is_paged(session, expected["large_run"], expected["large_output"])
            await injection_is_inert(session, expected["evil_session"], expected["evil_run"], expected["large_run"])
            await malformed_calls_are_answered(session, expected["large_run"], expected["evil_run"])
        await runs_start_wait_and_refuse(place)
        await slow_run_stopped_ends_cancelled(slow)


async def drive_elsewhere(expected: dict[str, Any]) -> None:
    """A workspace of a host (`--remote`) or a bucket (`--source`): the server as `argv` and `env`
    start it; the checks the expected file has what they need for (the module's docstring)."""
    place = Place(expected["argv"], expected["env"])
    with anyio.fail_after(DEADLINE_SECONDS):
        if expected["runs"]:
            await write_tools_absent_without_allow_runs(place)
        else:
            await read_tools_alone(place)
        async with connect(place, allow_runs=False) as session:
            await list_sessions_is_the_cli_listing(session, expected["sessions"])
            if "large_output" in expected:
                await output_is_paged(session, expected["large_run"], expected["large_output"])
            else:
                await folder_output_is_paged(session, expected["output_of"], expected["output_holds"])
            if "evil_session" in expected:
                await injection_is_inert(session, expected["evil_session"], expected["evil_run"], expected["large_run"])
                await malformed_calls_are_answered(session, expected["large_run"], expected["evil_run"])
        if expected["runs"]:
            await runs_start_wait_and_refuse(place)
        if "slow_argv" in expected:
            await slow_run_stopped_ends_cancelled(Place(expected["slow_argv"], expected["env"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zstudio")
    parser.add_argument("--expected", required=True)
    parser.add_argument("--elsewhere", action="store_true", help="the expected file names the server to start")
    for prefix in ("", "slow-"):
        parser.add_argument(f"--{prefix}workspace")
        parser.add_argument(f"--{prefix}db")
        parser.add_argument(f"--{prefix}data-home")
    arguments = parser.parse_args()
    if not arguments.elsewhere and None in (arguments.zstudio, arguments.workspace, arguments.slow_workspace):
        parser.error("--zstudio, --workspace and --slow-workspace (and their --db, --data-home) are needed")
    began = time.monotonic()
    try:
        anyio.run(drive, arguments)
    except BaseException as error:
        failure = failure_in(error)
        if failure is None:
            raise
        if isinstance(failure, TimeoutError):
            print(f"FAILED: not done within {DEADLINE_SECONDS} s", file=sys.stderr, flush=True)
        else:
            print(f"FAILED: {failure}", file=sys.stderr, flush=True)
        return 1
    print(f"ok: all checks passed in {time.monotonic() - began:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
