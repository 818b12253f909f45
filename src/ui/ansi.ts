/**
 * ANSI SGR colour codes in engine logs, turned into styled segments. Only a fixed set of class
 * names can come out, and the text of each segment is escaped by whoever renders it (JSX), so a
 * log line can never inject markup. Other escape sequences are dropped.
 */

export type AnsiSegment = { text: string; classes: string };

type Style = {
  fg: number | null;
  bg: number | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
};

const PLAIN: Style = {
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
};

// CSI sequences (ESC [ params final) and the rare two-byte escapes; OSC strings up to BEL/ST.
const ESCAPES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences begin with ESC.
  /\u001b\[([0-9;?]*)([@-~])|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

function applySgr(style: Style, params: string): Style {
  const codes = params === "" ? [0] : params.split(";").map((p) => Number(p) || 0);
  let next = { ...style };
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i] ?? 0;
    if (code === 0) {
      next = { ...PLAIN };
    } else if (code === 1) {
      next.bold = true;
    } else if (code === 2) {
      next.dim = true;
    } else if (code === 3) {
      next.italic = true;
    } else if (code === 4) {
      next.underline = true;
    } else if (code === 22) {
      next.bold = false;
      next.dim = false;
    } else if (code === 23) {
      next.italic = false;
    } else if (code === 24) {
      next.underline = false;
    } else if (code >= 30 && code <= 37) {
      next.fg = code - 30;
    } else if (code >= 90 && code <= 97) {
      next.fg = code - 90 + 8;
    } else if (code === 39) {
      next.fg = null;
    } else if (code >= 40 && code <= 47) {
      next.bg = code - 40;
    } else if (code >= 100 && code <= 107) {
      next.bg = code - 100 + 8;
    } else if (code === 49) {
      next.bg = null;
    } else if (code === 38 || code === 48) {
      // 256-colour and truecolour forms: skip their arguments, keep the default colour.
      i += codes[i + 1] === 5 ? 2 : 4;
    }
  }
  return next;
}

function classesOf(style: Style): string {
  const out: string[] = [];
  if (style.fg !== null) {
    out.push(`ansi-fg-${style.fg}`);
  }
  if (style.bg !== null) {
    out.push(`ansi-bg-${style.bg}`);
  }
  if (style.bold) {
    out.push("ansi-bold");
  }
  if (style.dim) {
    out.push("ansi-dim");
  }
  if (style.italic) {
    out.push("ansi-italic");
  }
  if (style.underline) {
    out.push("ansi-underline");
  }
  return out.join(" ");
}

/** Splits `text` into segments of one style each; the style starts plain. */
export function parseAnsi(text: string): AnsiSegment[] {
  const segments: AnsiSegment[] = [];
  let style = { ...PLAIN };
  let last = 0;
  const push = (chunk: string) => {
    if (chunk === "") {
      return;
    }
    const classes = classesOf(style);
    const prev = segments[segments.length - 1];
    if (prev && prev.classes === classes) {
      prev.text += chunk;
    } else {
      segments.push({ text: chunk, classes });
    }
  };
  for (const match of text.matchAll(ESCAPES)) {
    push(text.slice(last, match.index));
    last = match.index + match[0].length;
    if (match[2] === "m") {
      style = applySgr(style, match[1] ?? "");
    }
  }
  push(text.slice(last));
  return segments;
}
