import { describe, expect, it } from "vitest";

import { bytesLabel, codeSpans, durationLabel, elapsedLabel, relativeTime, statusMark } from "./format";

const now = new Date("2026-11-29T12:00:00Z");
const ago = (ms: number) => new Date(now.getTime() - ms);

describe("relativeTime", () => {
  it("says how long ago, in the largest whole unit", () => {
    expect(relativeTime(ago(3_000), now)).toBe("just now");
    expect(relativeTime(ago(42_000), now)).toBe("42 s ago");
    expect(relativeTime(ago(5 * 60_000 + 59_000), now)).toBe("5 min ago");
    expect(relativeTime(ago(3 * 3_600_000), now)).toBe("3 h ago");
    expect(relativeTime(ago(2 * 86_400_000), now)).toBe("2 d ago");
  });

  it("gives a date for old times and for clocks ahead of ours", () => {
    expect(relativeTime(ago(30 * 86_400_000), now)).not.toMatch(/ago/);
    expect(relativeTime(ago(-10 * 60_000), now)).not.toMatch(/ago|in /);
    expect(relativeTime(ago(-5_000), now)).toBe("just now");
  });

  it("does not invent a time it cannot parse", () => {
    expect(relativeTime(new Date("not a date"), now)).toBe("unknown");
  });
});

describe("statusMark", () => {
  it("has a mark for every status", () => {
    for (const status of ["running", "success", "error", "cancelled", "interrupted", "unknown"] as const) {
      expect(statusMark(status)).not.toBe("");
    }
  });
});

describe("elapsedLabel", () => {
  it("reads like a clock", () => {
    expect(elapsedLabel(0)).toBe("0:00");
    expect(elapsedLabel(7_900)).toBe("0:07");
    expect(elapsedLabel(12 * 60_000 + 34_000)).toBe("12:34");
    expect(elapsedLabel(3_723_000)).toBe("1:02:03");
    expect(elapsedLabel(23 * 3_600_000 + 59 * 60_000 + 59_000)).toBe("23:59:59");
    expect(elapsedLabel(81 * 3_600_000 + 50 * 60_000)).toBe("3 d 09:50:00");
  });
});

describe("durationLabel", () => {
  it("picks a unit people read at a glance", () => {
    expect(durationLabel(850)).toBe("850 ms");
    expect(durationLabel(2_400)).toBe("2.4 s");
    expect(durationLabel(2_499)).toBe("2.4 s");
    expect(durationLabel(59_999)).toBe("59.9 s");
    expect(durationLabel(3 * 60_000 + 5_000)).toBe("3 min 05 s");
    expect(durationLabel(3_600_000 + 2 * 60_000)).toBe("1 h 02 min");
    expect(durationLabel(-1)).toBe("—");
  });
});

describe("bytesLabel", () => {
  it("uses binary units, whole when whole, else to a tenth", () => {
    expect(bytesLabel(12)).toBe("12 B");
    expect(bytesLabel(3_482)).toBe("3.4 KiB");
    expect(bytesLabel(2 * 1_048_576)).toBe("2 MiB");
    expect(bytesLabel(1536 * 1024)).toBe("1.5 MiB");
    expect(bytesLabel(2 * 1_048_576 - 1)).toBe("2 MiB");
    expect(bytesLabel(1_073_741_824)).toBe("1 GiB");
  });
});

describe("codeSpans", () => {
  it("splits a text into code between backtick pairs and plain text", () => {
    expect(codeSpans("run `zstudio run -- x` or set `A=1`.")).toEqual([
      { text: "run ", code: false },
      { text: "zstudio run -- x", code: true },
      { text: " or set ", code: false },
      { text: "A=1", code: true },
      { text: ".", code: false },
    ]);
  });

  it("keeps a backtick without its pair, and text without backticks whole", () => {
    expect(codeSpans("a `b` c ` d")).toEqual([
      { text: "a ", code: false },
      { text: "b", code: true },
      { text: " c ", code: false },
      { text: "` d", code: false },
    ]);
    expect(codeSpans("<b>plain</b>")).toEqual([{ text: "<b>plain</b>", code: false }]);
  });
});
