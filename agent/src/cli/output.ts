/** Where a command writes: results to `out`, progress and notices to `err`. */
export type Io = {
  out: { write(chunk: string | Uint8Array): unknown };
  err: { write(chunk: string): unknown };
};

/**
 * `text` with every control character (ESC, BEL, CR, C1, …) written as a `\xNN` escape,
 * so a value from the coordinator (an agent's name, a token's description, an OIDC subject) can
 * never drive the terminal.
 */
export function printable(text: string): string {
  return text.replace(
    /\p{Cc}/gu,
    (c) => `\\x${(c.codePointAt(0) ?? 0).toString(16).padStart(2, "0")}`,
  );
}

/**
 * Left-aligned columns separated by two spaces; the first row is the header. Cells are made
 * {@link printable}.
 */
export function table(input: string[][]): string {
  const rows = input.map((row) => row.map(printable));
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

/** Pretty JSON with a trailing newline, for `--json`. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A cell for a possibly missing value. */
export function cell(value: string | number | boolean | null | undefined): string {
  return value === null || value === undefined || value === "" ? "-" : String(value);
}
