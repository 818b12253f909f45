/**
 * A streaming JSON validator that keeps only what the state backend needs: the raw bytes and byte
 * span of chosen top-level members of the root object. A 20 MB state passes through in chunks
 * and is never held whole; memory is bounded by the capture limits and the nesting depth.
 *
 * Tokens (strings, numbers, literals, their escapes) are `@streamparser/json`'s tokenizer's; the
 * grammar of one JSON object, the depth limit and the byte-exact capture are this module's. The
 * bench measured 10 MB state writes through it against the hand-written scanner it replaced
 * (docs/performance.md, "State body scanner").
 */
import { Tokenizer, TokenType } from "@streamparser/json";

/** What to keep of one top-level member. */
export type FieldSpec = { maxBytes: number };

/** A captured top-level member: its value's raw JSON bytes (null when over the limit). */
export type ScannedField = {
  kind: "object" | "array" | "string" | "number" | "literal";
  raw: Uint8Array | null;
  /** Absolute byte offsets of the value: [start, end). */
  start: number;
  end: number;
};

export type ScanOutcome =
  | { ok: true; fields: Map<string, ScannedField> }
  | { ok: false; reason: string };

const MAX_DEPTH = 512;
const MAX_KEY_CHARS = 64;

type Expect =
  | "root"
  | "value"
  | "keyOrEnd"
  | "key"
  | "colon"
  | "afterValue"
  | "valueOrEnd"
  | "done";

type Capture = {
  name: string;
  spec: FieldSpec;
  kind: ScannedField["kind"];
  start: number;
  depth: number;
  /** For a string, number or literal: it ends where the next token begins, less whitespace. */
  isPrimitive: boolean;
};

/** What the tokenizer's state at an unexpected byte means, in the words users read. */
const TOKEN_ERRORS: [RegExp, string][] = [
  [/STRING_AFTER_BACKSLASH/, "an invalid escape in a string"],
  [/STRING_UNICODE/, "an invalid \\u escape"],
  [/STRING/, "a control character inside a string"],
  [/NUMBER/, "an invalid number"],
  [/TRUE|FALSE|NULL/, "an invalid literal"],
];

/**
 * Feed chunks with {@link JsonScanner.push}, then call {@link JsonScanner.finish}. Refuses
 * anything that is not a single JSON object (RFC 8259), with a reason naming the byte offset.
 */
export class JsonScanner {
  private readonly tokenizer = new Tokenizer();
  private readonly specs: Record<string, FieldSpec>;
  private readonly fields = new Map<string, ScannedField>();
  private readonly stack: (0 | 1)[] = [];
  private expect: Expect = "root";
  private error: string | null = null;
  private key: string | null = null;
  private capture: Capture | null = null;
  /**
   * From the `:` of a member to keep until its value ends: the chunks, by absolute offset (a
   * token is reported only once it is complete, so its first bytes may be chunks back).
   * Dropped when the value passes its limit.
   */
  private keepFrom: number | null = null;
  private keptUntil = 0;
  private keepSpec: FieldSpec | null = null;
  private spans: { at: number; bytes: Uint8Array }[] = [];
  private spanBytes = 0;
  private offset = 0;
  /** Where a `0` token ended, to tell `01` (two tokens, no gap) from `0 1`. */
  private previousNumberEnd = -1;

  constructor(specs: Record<string, FieldSpec>) {
    this.specs = specs;
    this.tokenizer.onToken = ({ token, value, offset }) => this.onToken(token, value, offset);
    this.tokenizer.onError = (err) => {
      this.error ??= describeTokenError(err.message, this.offset);
    };
    this.tokenizer.onEnd = () => undefined;
  }

  /** Scans one chunk; false (and no further work) once the input is known to be invalid. */
  push(chunk: Uint8Array): boolean {
    if (this.error !== null) {
      return false;
    }
    const at = this.offset;
    this.offset += chunk.byteLength;
    this.current = { at, bytes: chunk };
    try {
      this.tokenizer.write(chunk);
    } catch (err) {
      this.error ??= describeTokenError(err instanceof Error ? err.message : String(err), at);
    }
    this.current = null;
    if (this.keepFrom !== null && this.error === null) {
      this.keep({ at, bytes: chunk });
    }
    return this.error === null;
  }

  private current: { at: number; bytes: Uint8Array } | null = null;

  /** The captured fields once the whole input has been pushed, or why it is not one JSON object. */
  finish(): ScanOutcome {
    if (this.error !== null) {
      return { ok: false, reason: this.error };
    }
    if (this.expect === "root") {
      return { ok: false, reason: "the body is empty" };
    }
    if (this.expect !== "done") {
      return { ok: false, reason: "the JSON ends early" };
    }
    return { ok: true, fields: this.fields };
  }

  private failAt(what: string, at: number): void {
    this.error ??= `not valid JSON: ${what} at byte ${at}`;
  }

  private onToken(token: TokenType, value: unknown, offset: number): void {
    if (this.error !== null) {
      return;
    }
    if (this.capture?.isPrimitive) {
      this.endCapture(offset, true);
    }
    if (token === TokenType.NUMBER && offset === this.previousNumberEnd) {
      this.failAt("an invalid number", offset);
      return;
    }
    this.previousNumberEnd = -1;
    switch (this.expect) {
      case "root":
        if (token !== TokenType.LEFT_BRACE) {
          this.error = "the body is not a JSON object";
          return;
        }
        this.stack.push(0);
        this.expect = "keyOrEnd";
        return;
      case "keyOrEnd":
      case "key":
        if (token === TokenType.RIGHT_BRACE && this.expect === "keyOrEnd") {
          this.close(offset);
          return;
        }
        if (token !== TokenType.STRING) {
          this.failAt("expected a member name", offset);
          return;
        }
        this.key =
          this.stack.length === 1 && String(value).length <= MAX_KEY_CHARS ? String(value) : null;
        this.expect = "colon";
        return;
      case "colon":
        if (token !== TokenType.COLON) {
          this.failAt("expected ':'", offset);
          return;
        }
        this.expect = "value";
        if (this.stack.length === 1 && this.key !== null && this.specs[this.key]) {
          this.keepFrom = offset + 1;
          this.keepSpec = this.specs[this.key] ?? null;
          this.keptUntil = offset + 1;
          this.spans = [];
          this.spanBytes = 0;
          if (this.current) {
            this.keep(this.current);
          }
        }
        return;
      case "valueOrEnd":
        if (token === TokenType.RIGHT_BRACKET) {
          this.close(offset);
          return;
        }
        this.startValue(token, value, offset);
        return;
      case "value":
        this.startValue(token, value, offset);
        return;
      case "afterValue":
        if (token === TokenType.COMMA) {
          this.expect = this.stack.at(-1) === 0 ? "key" : "value";
          return;
        }
        if (
          (token === TokenType.RIGHT_BRACE && this.stack.at(-1) === 0) ||
          (token === TokenType.RIGHT_BRACKET && this.stack.at(-1) === 1)
        ) {
          this.close(offset);
          return;
        }
        this.failAt("expected ',' or the end of the container", offset);
        return;
      case "done":
        this.failAt("unexpected content after the JSON value", offset);
        return;
    }
  }

  private startValue(token: TokenType, value: unknown, offset: number): void {
    const kind = kindOf(token);
    if (kind === null) {
      this.failAt("expected a value", offset);
      return;
    }
    const depth = this.stack.length;
    const isContainer = kind === "object" || kind === "array";
    if (isContainer && depth >= MAX_DEPTH) {
      this.failAt("nesting too deep", offset);
      return;
    }
    // A member of the root object whose name we were asked to keep.
    const spec = depth === 1 && this.key !== null ? this.specs[this.key] : undefined;
    if (spec && this.key !== null) {
      this.capture = {
        name: this.key,
        spec,
        kind,
        start: offset,
        depth,
        isPrimitive: !isContainer,
      };
    }
    if (kind === "number" && value === 0) {
      // A leading zero followed by digits comes out as two numbers with no gap between them.
      this.previousNumberEnd = offset + (Object.is(value, -0) ? 2 : 1);
    }
    if (isContainer) {
      this.stack.push(kind === "object" ? 0 : 1);
      this.expect = kind === "object" ? "keyOrEnd" : "valueOrEnd";
      return;
    }
    this.expect = "afterValue";
  }

  private close(offset: number): void {
    this.stack.pop();
    if (this.stack.length === 0) {
      this.expect = "done";
      return;
    }
    if (this.capture && !this.capture.isPrimitive && this.stack.length === this.capture.depth) {
      this.endCapture(offset + 1, false);
    }
    this.expect = "afterValue";
  }

  /** Keeps the bytes of `chunk` not kept yet, from `keepFrom` on, until the limit is passed. */
  private keep(chunk: { at: number; bytes: Uint8Array }): void {
    const spec = this.keepSpec;
    if (this.keepFrom === null || !spec) {
      return;
    }
    const from = Math.max(this.keptUntil, this.keepFrom, chunk.at);
    const to = chunk.at + chunk.bytes.byteLength;
    if (to <= from) {
      return;
    }
    this.keptUntil = to;
    if (this.spanBytes > spec.maxBytes + 4096) {
      // Far past the limit (the end may still trim whitespace): keep nothing more.
      this.spans = [];
      return;
    }
    // Copy: the chunk's buffer belongs to the stream and may be reused or transferred.
    this.spans.push({ at: from, bytes: chunk.bytes.slice(from - chunk.at) });
    this.spanBytes += to - from;
  }

  /** The capture's value ended just before `end`; trailing whitespace is not part of it. */
  private endCapture(end: number, trimWhitespace: boolean): void {
    const capture = this.capture;
    if (!capture) {
      return;
    }
    if (this.current) {
      this.keep(this.current);
    }
    this.capture = null;
    const bytes = this.join(capture.start, end);
    let stop = bytes ? bytes.byteLength : end - capture.start;
    while (trimWhitespace && bytes && stop > 0 && isSpace(bytes[stop - 1] ?? 0)) {
      stop--;
    }
    const size = trimWhitespace && !bytes ? end - capture.start : stop;
    const raw = bytes && size <= capture.spec.maxBytes ? bytes.slice(0, stop) : null;
    this.fields.set(capture.name, {
      kind: capture.kind,
      raw,
      start: capture.start,
      end: capture.start + size,
    });
    this.keepFrom = null;
    this.spans = [];
  }

  /** The bytes [start, end) from the kept spans, or null when they were given back. */
  private join(start: number, end: number): Uint8Array | null {
    const length = end - start;
    const kept = this.spans.reduce((n, s) => n + s.bytes.byteLength, 0);
    if (this.spans.length === 0 || kept < length) {
      return null;
    }
    const out = new Uint8Array(length);
    for (const { at, bytes } of this.spans) {
      const from = Math.max(start, at);
      const to = Math.min(end, at + bytes.byteLength);
      if (to > from) {
        out.set(bytes.subarray(from - at, to - at), from - start);
      }
    }
    return out;
  }
}

function kindOf(token: TokenType): ScannedField["kind"] | null {
  switch (token) {
    case TokenType.LEFT_BRACE:
      return "object";
    case TokenType.LEFT_BRACKET:
      return "array";
    case TokenType.STRING:
      return "string";
    case TokenType.NUMBER:
      return "number";
    case TokenType.TRUE:
    case TokenType.FALSE:
    case TokenType.NULL:
      return "literal";
    default:
      return null;
  }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** The tokenizer's error (`Unexpected "x" at … (absolute position "7") in state …`) in our words. */
function describeTokenError(message: string, fallbackAt: number): string {
  const at = /absolute position "(\d+)"/.exec(message)?.[1] ?? String(fallbackAt);
  const state = /in state (\w+)/.exec(message)?.[1] ?? "";
  const what =
    TOKEN_ERRORS.find(([pattern]) => pattern.test(state))?.[1] ??
    (state === "START" || state === "ENDED" ? "expected a value" : "an invalid token");
  return `not valid JSON: ${what} at byte ${at}`;
}
