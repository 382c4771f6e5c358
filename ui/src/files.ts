// Reading a session's files in place (components/session/FileViewer.svelte, FilesPanel.svelte):
// big files are read in chunks ("Load more"); binary files are named, not shown. File contents are
// untrusted: text only.

/** How much of a file one read brings. */
export const FILE_CHUNK_BYTES = 256 * 1024;

/** A chunk of ANSI text as whole lines to draw (each with whether a newline follows it): the end
 * of a chunk inside a line waits for the next chunk (`partial`), the file's own end is drawn. */
export function ansiChunkLines(
  partial: string,
  text: string,
  last: boolean,
): { lines: { text: string; newline: boolean }[]; partial: string } {
  const whole = partial + text;
  const lines = whole.split("\n");
  const tail = lines.pop() ?? "";
  if (last && tail !== "") lines.push(tail);
  return {
    lines: lines.map((line, index) => ({
      text: line,
      newline: index < lines.length - 1 || whole.endsWith("\n") || !last,
    })),
    partial: last ? "" : tail,
  };
}
