// The Logs tab (the studio's log lines about a session) and the Conversation tab (its messages).

import { el } from "./elements";
import { durationLabel, exactTime } from "./format";
import type { LogLine, Message } from "./types";

/** Logs beyond this many are left out (the newest are kept). */
const MOST_LOG_LINES = 5_000;

/** "12:03:04.512", local time. */
export function clockTime(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.${pad(time.getMilliseconds(), 3)}`;
}

/** A log line's fields as an object (the store sends `null` for a line without any). */
export function fieldsOf(line: LogLine): Record<string, unknown> {
  const fields: unknown = line.fields;
  return typeof fields === "object" && fields !== null && !Array.isArray(fields)
    ? (fields as Record<string, unknown>)
    : {};
}

/** The fields other than `elapsed_ms`, as `key=value` text. */
export function fieldsLabel(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([key]) => key !== "elapsed_ms")
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" ");
}

export function logsView(logs: readonly LogLine[]): HTMLElement {
  if (logs.length === 0) return el("p", { class: "muted panel-note" }, "No log lines for this session.");
  const shown = logs.slice(-MOST_LOG_LINES);
  return el(
    "div",
    { class: "logs" },
    shown.length < logs.length &&
      el(
        "p",
        { class: "muted panel-note" },
        `The last ${MOST_LOG_LINES.toLocaleString("en-US")} of ${logs.length.toLocaleString("en-US")} lines.`,
      ),
    ...shown.map((line) => {
      const fields = fieldsOf(line);
      const elapsed = fields["elapsed_ms"];
      const extra = fieldsLabel(fields);
      return el(
        "div",
        { class: `log-line level-${line.level}`, attrs: { "data-event": line.event, "data-level": line.level } },
        el(
          "time",
          { class: "log-time", title: exactTime(new Date(line.at)), attrs: { datetime: line.at } },
          clockTime(line.at),
        ),
        el("span", { class: "log-level" }, line.level),
        el("code", { class: "log-event" }, line.event),
        el(
          "span",
          { class: "log-message" },
          line.message,
          extra && el("span", { class: "log-fields muted" }, ` ${extra}`),
        ),
        el("span", { class: "log-elapsed muted" }, typeof elapsed === "number" ? durationLabel(elapsed) : ""),
      );
    }),
  );
}

export function conversationView(messages: readonly Message[]): HTMLElement {
  if (messages.length === 0)
    return el("p", { class: "muted panel-note" }, "No conversation messages for this session.");
  return el(
    "div",
    { class: "conversation" },
    ...messages.map((message) =>
      el(
        "div",
        { class: "message", attrs: { "data-role": message.role, "data-seq": String(message.seq) } },
        el(
          "div",
          { class: "message-meta" },
          el("span", { class: "message-role" }, message.role),
          el(
            "time",
            { class: "muted", title: exactTime(new Date(message.created_at)), attrs: { datetime: message.created_at } },
            clockTime(message.created_at),
          ),
        ),
        el("div", { class: "message-text" }, message.text),
      ),
    ),
  );
}
