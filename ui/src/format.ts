// Pure text formatting for the views: no DOM, no clock (the caller passes `now`).

import type { Status } from "./types";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// Intl formatters are slow to make (a table row needs two): made once, on first use.
let dateFormat: Intl.DateTimeFormat | null = null;
let fullFormat: Intl.DateTimeFormat | null = null;

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago", then the date. */
export function relativeTime(then: Date, now: Date): string {
  const ago = now.getTime() - then.getTime();
  if (Number.isNaN(ago)) return "unknown";
  if (ago < -MINUTE) return exactTime(then); // a clock ahead of ours: say when, not "in the future"
  if (ago < 10 * SECOND) return "just now";
  if (ago < MINUTE) return `${Math.floor(ago / SECOND)} s ago`;
  if (ago < HOUR) return `${Math.floor(ago / MINUTE)} min ago`;
  if (ago < DAY) return `${Math.floor(ago / HOUR)} h ago`;
  if (ago < 7 * DAY) return `${Math.floor(ago / DAY)} d ago`;
  dateFormat ??= new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric" });
  return dateFormat.format(then);
}

/** The full local date and time, for tooltips. */
export function exactTime(time: Date): string {
  if (Number.isNaN(time.getTime())) return "unknown";
  fullFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "medium" });
  return fullFormat.format(time);
}

const STATUS_MARK: Record<Status, string> = {
  running: "●",
  success: "✓",
  error: "✗",
  cancelled: "⊘",
  interrupted: "!",
  unknown: "?",
};

export function statusMark(status: Status): string {
  return STATUS_MARK[status] ?? "?";
}

/** A duration as a clock: "0:07", "12:34", "1:02:03", "3 d 09:50:00". */
export function elapsedLabel(ms: number): string {
  const total = Math.max(0, Math.floor(ms / SECOND));
  const seconds = String(total % 60).padStart(2, "0");
  const minutes = Math.floor(total / 60) % 60;
  const hours = Math.floor(total / 3600) % 24;
  const days = Math.floor(total / 86_400);
  // Past a day (an imported session whose files changed over days), the days are counted apart:
  // "3 d 09:50:00", not "81:50:00".
  if (days > 0) return `${days} d ${String(hours).padStart(2, "0")}:${String(minutes).padStart(2, "0")}:${seconds}`;
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

/** A duration for people: "850 ms", "2.4 s", "3 min 05 s", "1 h 02 min". */
export function durationLabel(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  if (ms < HOUR)
    return `${Math.floor(ms / MINUTE)} min ${String(Math.floor((ms % MINUTE) / SECOND)).padStart(2, "0")} s`;
  return `${Math.floor(ms / HOUR)} h ${String(Math.floor((ms % HOUR) / MINUTE)).padStart(2, "0")} min`;
}

/**
 * A byte count as every surface shows it (the core's `size::human_bytes`): in the largest binary
 * unit it reaches, whole when it is ("2 MiB"), else to a tenth ("1.5 MiB"); "12 B" under 1 KiB.
 */
export function bytesLabel(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const tenths = Math.round(value * 10) / 10;
  return unit === 0 || Number.isInteger(tenths)
    ? `${tenths.toFixed(0)} ${units[unit]}`
    : `${tenths.toFixed(1)} ${units[unit]}`;
}

/** A part of a text with inline code spans: code (drawn as `<code>`) or plain text. */
export interface TextPart {
  text: string;
  code: boolean;
}

/**
 * A text's inline code spans (between backticks, as the studio's notes write commands), as parts
 * to draw as text nodes, never as HTML. A backtick without its pair stays as written.
 */
export function codeSpans(text: string): TextPart[] {
  const pieces = text.split("`");
  const parts: TextPart[] = pieces.map((piece, index) => ({ text: piece, code: index % 2 === 1 }));
  if (pieces.length % 2 === 0) {
    // An odd count of backticks: the last one opens nothing.
    const unpaired = parts.pop()!;
    parts.push({ text: "`" + unpaired.text, code: false });
  }
  return parts.filter((part) => part.text !== "" || part.code);
}
