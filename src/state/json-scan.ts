/**
 * A streaming JSON validator that keeps only what the state backend needs: the raw bytes and byte
 * span of chosen top-level members of the root object. A 20 MB state passes through in chunks
 * and is never held whole; memory is bounded by the capture limits and the nesting depth. Pure.
 */

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
const MAX_KEY_BYTES = 64;
const MAX_NUMBER_CHARS = 64;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

// Parser states.
const S = {
  Start: 0,
  Value: 1,
  KeyOrEnd: 2,
  Key: 3,
  Colon: 4,
  AfterValue: 5,
  ValueOrEnd: 6,
  Str: 7,
  StrEscape: 8,
  StrUnicode: 9,
  Num: 10,
  Literal: 11,
  Done: 12,
} as const;
type State = (typeof S)[keyof typeof S];

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function isHex(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
}

function isNumberChar(b: number): boolean {
  return (
    (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x65 || b === 0x45
  );
}

type Capture = {
  name: string;
  spec: FieldSpec;
  kind: ScannedField["kind"];
  start: number;
  parts: Uint8Array[];
  size: number;
  over: boolean;
  depth: number;
};

/**
 * Feed chunks with {@link JsonScanner.push}, then call {@link JsonScanner.finish}. Refuses
 * anything that is not a single JSON object (RFC 8259), with a reason naming the byte offset.
 */
export class JsonScanner {
  private state: State = S.Start;
  private readonly stack: number[] = []; // 0 object, 1 array
  private offset = 0;
  private error: string | null = null;
  private isKey = false;
  private keyBytes: number[] = [];
  private currentKey: string | null = null;
  private unicodeLeft = 0;
  private literal = "";
  private literalPos = 0;
  private number = "";
  private capture: Capture | null = null;
  private captureFrom = 0;
  private readonly fields = new Map<string, ScannedField>();
  private readonly specs: Record<string, FieldSpec>;

  constructor(specs: Record<string, FieldSpec>) {
    this.specs = specs;
  }

  /** Scans one chunk; false (and no further work) once the input is known to be invalid. */
  push(chunk: Uint8Array): boolean {
    if (this.error !== null) {
      return false;
    }
    this.captureFrom = 0;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      const b = chunk[i] ?? 0;
      switch (this.state) {
        case S.Str: {
          // Fast path: most of a state file is string content.
          while (i < n) {
            const c = chunk[i] ?? 0;
            if (c === 0x22 || c === 0x5c || c < 0x20) {
              break;
            }
            if (this.isKey && this.stack.length === 1 && this.keyBytes.length <= MAX_KEY_BYTES) {
              this.keyBytes.push(c);
            }
            i++;
          }
          if (i >= n) {
            continue;
          }
          const c = chunk[i] ?? 0;
          if (c < 0x20) {
            return this.fail("a control character inside a string");
          }
          if (c === 0x5c) {
            this.keyBytes.length = MAX_KEY_BYTES + 1; // escaped keys are never ones we look for
            this.state = S.StrEscape;
            i++;
            continue;
          }
          i++;
          this.endString(chunk, i);
          continue;
        }
        case S.StrEscape:
          if (b === 0x75) {
            this.unicodeLeft = 4;
            this.state = S.StrUnicode;
          } else if ('"\\/bfnrt'.includes(String.fromCharCode(b))) {
            this.state = S.Str;
          } else {
            return this.fail("an invalid escape in a string");
          }
          i++;
          continue;
        case S.StrUnicode:
          if (!isHex(b)) {
            return this.fail("an invalid \\u escape");
          }
          this.unicodeLeft--;
          if (this.unicodeLeft === 0) {
            this.state = S.Str;
          }
          i++;
          continue;
        case S.Num:
          if (isNumberChar(b)) {
            if (this.number.length >= MAX_NUMBER_CHARS) {
              return this.fail("a number that is too long");
            }
            this.number += String.fromCharCode(b);
            i++;
            continue;
          }
          if (!NUMBER.test(this.number)) {
            return this.fail(`an invalid number ${JSON.stringify(this.number)}`);
          }
          this.endValue(chunk, i);
          this.state = S.AfterValue;
          continue; // the delimiter is handled by AfterValue
        case S.Literal:
          if (b !== this.literal.charCodeAt(this.literalPos)) {
            return this.fail("an invalid literal");
          }
          this.literalPos++;
          i++;
          if (this.literalPos === this.literal.length) {
            this.endValue(chunk, i);
            this.state = S.AfterValue;
          }
          continue;
        default:
          break;
      }
      if (isSpace(b)) {
        i++;
        continue;
      }
      if (!this.structural(b, chunk, i)) {
        return false;
      }
      i++;
    }
    this.offset += n;
    const capture = this.capture;
    if (capture && !capture.over) {
      this.append(capture, chunk.subarray(this.captureFrom));
    }
    return true;
  }

  /** The captured fields once the whole input has been pushed, or why it is not one JSON object. */
  finish(): ScanOutcome {
    if (this.error !== null) {
      return { ok: false, reason: this.error };
    }
    if (this.state === S.Start) {
      return { ok: false, reason: "the body is empty" };
    }
    if (this.state !== S.Done) {
      return { ok: false, reason: "the JSON ends early" };
    }
    return { ok: true, fields: this.fields };
  }

  private fail(what: string): false {
    this.error = `not valid JSON: ${what} at byte ${this.offset}`;
    return false;
  }

  private structural(b: number, chunk: Uint8Array, i: number): boolean {
    const at = this.offset + i;
    switch (this.state) {
      case S.Start:
        if (b !== 0x7b) {
          this.error = "the body is not a JSON object";
          return false;
        }
        this.stack.push(0);
        this.state = S.KeyOrEnd;
        return true;
      case S.KeyOrEnd:
      case S.Key:
        if (b === 0x7d && this.state === S.KeyOrEnd) {
          return this.close(0, chunk, i);
        }
        if (b !== 0x22) {
          return this.failAt("expected a member name", at);
        }
        this.isKey = true;
        this.keyBytes = [];
        this.state = S.Str;
        return true;
      case S.Colon:
        if (b !== 0x3a) {
          return this.failAt("expected ':'", at);
        }
        this.state = S.Value;
        return true;
      case S.ValueOrEnd:
        if (b === 0x5d) {
          return this.close(1, chunk, i);
        }
        return this.startValue(b, i);
      case S.Value:
        return this.startValue(b, i);
      case S.AfterValue: {
        const top = this.stack[this.stack.length - 1];
        if (b === 0x2c) {
          this.state = top === 0 ? S.Key : S.Value;
          return true;
        }
        if (b === 0x7d && top === 0) {
          return this.close(0, chunk, i);
        }
        if (b === 0x5d && top === 1) {
          return this.close(1, chunk, i);
        }
        return this.failAt("expected ',' or the end of the container", at);
      }
      default:
        return this.failAt("unexpected content after the JSON value", at);
    }
  }

  private failAt(what: string, at: number): false {
    this.error = `not valid JSON: ${what} at byte ${at}`;
    return false;
  }

  private startValue(b: number, i: number): boolean {
    const depth = this.stack.length;
    let kind: ScannedField["kind"];
    if (b === 0x7b || b === 0x5b) {
      if (depth >= MAX_DEPTH) {
        return this.failAt("nesting too deep", this.offset + i);
      }
      kind = b === 0x7b ? "object" : "array";
    } else if (b === 0x22) {
      kind = "string";
    } else if (b === 0x2d || (b >= 0x30 && b <= 0x39)) {
      kind = "number";
    } else if (b === 0x74 || b === 0x66 || b === 0x6e) {
      kind = "literal";
    } else {
      return this.failAt("expected a value", this.offset + i);
    }
    // A member of the root object whose name we were asked to keep.
    const spec = depth === 1 && this.currentKey !== null ? this.specs[this.currentKey] : undefined;
    if (spec && this.currentKey !== null && this.stack[0] === 0) {
      this.capture = {
        name: this.currentKey,
        spec,
        kind,
        start: this.offset + i,
        parts: [],
        size: 0,
        over: false,
        depth,
      };
      this.captureFrom = i;
    }
    switch (kind) {
      case "object":
        this.stack.push(0);
        this.state = S.KeyOrEnd;
        return true;
      case "array":
        this.stack.push(1);
        this.state = S.ValueOrEnd;
        return true;
      case "string":
        this.isKey = false;
        this.state = S.Str;
        return true;
      case "number":
        this.number = String.fromCharCode(b);
        this.state = S.Num;
        return true;
      default:
        this.literal = b === 0x74 ? "true" : b === 0x66 ? "false" : "null";
        this.literalPos = 1;
        this.state = S.Literal;
        return true;
    }
  }

  private endString(chunk: Uint8Array, next: number): void {
    if (this.isKey) {
      this.isKey = false;
      this.currentKey =
        this.stack.length === 1 && this.keyBytes.length <= MAX_KEY_BYTES
          ? String.fromCharCode(...this.keyBytes)
          : null;
      this.state = S.Colon;
      return;
    }
    this.endValue(chunk, next);
    this.state = S.AfterValue;
  }

  private close(kind: number, chunk: Uint8Array, i: number): boolean {
    if (this.stack.pop() !== kind) {
      return this.failAt("mismatched brackets", this.offset + i);
    }
    if (this.stack.length === 0) {
      this.state = S.Done;
      return true;
    }
    this.endValue(chunk, i + 1);
    this.state = S.AfterValue;
    return true;
  }

  /** A value ended just before `end` (chunk index); completes the capture it belonged to. */
  private endValue(chunk: Uint8Array, end: number): void {
    const capture = this.capture;
    if (!capture || this.stack.length !== capture.depth) {
      return;
    }
    this.append(capture, chunk.subarray(this.captureFrom, end));
    let raw: Uint8Array | null = null;
    if (!capture.over) {
      raw = new Uint8Array(capture.size);
      let at = 0;
      for (const part of capture.parts) {
        raw.set(part, at);
        at += part.length;
      }
    }
    this.fields.set(capture.name, {
      kind: capture.kind,
      raw,
      start: capture.start,
      end: this.offset + end,
    });
    this.capture = null;
  }

  private append(capture: Capture, part: Uint8Array): void {
    if (capture.over) {
      return;
    }
    capture.size += part.length;
    if (capture.size > capture.spec.maxBytes) {
      capture.over = true;
      capture.parts = [];
      return;
    }
    // Copy: the chunk's buffer belongs to the stream and may be reused or transferred.
    capture.parts.push(part.slice());
  }
}
