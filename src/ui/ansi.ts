/**
 * ANSI SGR colour codes in engine logs, turned into styled segments. Parsing is `anser`'s; this
 * module maps what it finds onto a fixed set of class names (16 colours, the 256-colour palette,
 * truecolour to its nearest palette entry, five decorations), because the dashboard's
 * Content-Security-Policy allows no inline style. The text of each segment is escaped by whoever
 * renders it (JSX), so a log line can never inject markup. Other escape sequences are dropped.
 */
import Anser from "anser";

export type AnsiSegment = { text: string; classes: string };

const NAMED = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"] as const;
const CUBE_LEVELS = [0, 95, 135, 175, 215, 255] as const;
const DECORATIONS: Readonly<Record<string, string>> = {
  bold: "ansi-bold",
  dim: "ansi-dim",
  italic: "ansi-italic",
  underline: "ansi-underline",
  strikethrough: "ansi-strike",
};

// What anser leaves in the text: OSC strings (window titles) and lone two-byte escapes.
const LEFTOVER_ESCAPES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences begin with ESC.
  /\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]?/g;

/** The xterm 256-colour palette entry `index` (16–255) as RGB. */
export function paletteRgb(index: number): [number, number, number] {
  if (index >= 232) {
    const grey = 8 + (index - 232) * 10;
    return [grey, grey, grey];
  }
  const cube = index - 16;
  const level = (n: number) => CUBE_LEVELS[n] ?? 0;
  return [level(Math.floor(cube / 36)), level(Math.floor(cube / 6) % 6), level(cube % 6)];
}

/** The palette entry (16–255) closest to a truecolour. */
export function nearestPaletteIndex(r: number, g: number, b: number): number {
  let best = 16;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let index = 16; index < 256; index++) {
    const [pr, pg, pb] = paletteRgb(index);
    const distance = (pr - r) ** 2 + (pg - g) ** 2 + (pb - b) ** 2;
    if (distance < bestDistance) {
      best = index;
      bestDistance = distance;
    }
  }
  return best;
}

/** anser's colour (`ansi-red`, `ansi-bright-red`, `ansi-palette-N`, `ansi-truecolor`) as an index. */
function colourIndex(colour: string | null, truecolor: string | null): number | null {
  if (!colour) {
    return null;
  }
  if (colour === "ansi-truecolor") {
    const [r = 0, g = 0, b = 0] = (truecolor ?? "").split(",").map((n) => Number(n.trim()));
    return nearestPaletteIndex(r, g, b);
  }
  const palette = /^ansi-palette-(\d{1,3})$/.exec(colour);
  if (palette) {
    const index = Number(palette[1]);
    return index < 256 ? index : null;
  }
  const named = /^ansi-(bright-)?(\w+)$/.exec(colour);
  const base = NAMED.indexOf((named?.[2] ?? "") as (typeof NAMED)[number]);
  return base < 0 ? null : base + (named?.[1] ? 8 : 0);
}

/** Splits `text` into segments of one style each; the style starts plain. */
export function parseAnsi(text: string): AnsiSegment[] {
  const segments: AnsiSegment[] = [];
  for (const entry of Anser.ansiToJson(text, { json: true, use_classes: true })) {
    const chunk = entry.content.replace(LEFTOVER_ESCAPES, "");
    if (chunk === "") {
      continue;
    }
    const fg = colourIndex(entry.fg, entry.fg_truecolor);
    const bg = colourIndex(entry.bg, entry.bg_truecolor);
    const classes = [
      ...(fg === null ? [] : [`ansi-fg-${fg}`]),
      ...(bg === null ? [] : [`ansi-bg-${bg}`]),
      ...Object.entries(DECORATIONS)
        .filter(([name]) => (entry.decorations as string[]).includes(name))
        .map(([, cls]) => cls),
    ].join(" ");
    const prev = segments[segments.length - 1];
    if (prev && prev.classes === classes) {
      prev.text += chunk;
    } else {
      segments.push({ text: chunk, classes });
    }
  }
  return segments;
}

/** CSS for palette entries 16–255 (0–15 are the theme's own, in `assets/dashboard.css`). */
export function paletteCss(): string {
  const rules: string[] = [];
  for (let index = 16; index < 256; index++) {
    const hex = `#${paletteRgb(index)
      .map((c) => c.toString(16).padStart(2, "0"))
      .join("")}`;
    rules.push(`.ansi-fg-${index}{color:${hex}}.ansi-bg-${index}{background:${hex}}`);
  }
  return rules.join("\n");
}
