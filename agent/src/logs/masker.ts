/** The text that replaces every sensitive value in a job log. */
export const MASK = "***";
const MASK_BYTES = Buffer.from(MASK);

/**
 * Shorter lines of a multi-line value, and shorter encoded forms, are not masked on their own:
 * they would match ordinary log text everywhere. The value itself is always masked.
 */
export const MIN_VARIANT_LENGTH = 4;

/** Leading base64 characters that also carry bits of what precedes the value, by its offset. */
const BASE64_LEADING = [0, 2, 3] as const;

function urlSafe(base64: string): string {
  return base64.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * The base64 of `value` as it appears on its own (padded and unpadded) and inside a longer
 * base64 text at each of the three byte alignments, without the edge characters that depend on
 * the neighbouring bytes; each in standard and URL-safe alphabets.
 */
function base64Forms(value: Buffer): string[] {
  const whole = value.toString("base64");
  const forms = [whole, whole.replace(/=+$/, "")];
  for (const [shift, leading] of BASE64_LEADING.entries()) {
    const text = Buffer.concat([Buffer.alloc(shift), value])
      .toString("base64")
      .replace(/=+$/, "");
    const trailing = (shift + value.length) % 3 === 0 ? 0 : 1;
    forms.push(text.slice(leading, text.length - trailing));
  }
  return [...forms, ...forms.map(urlSafe)];
}

/** Percent-encodings of `value`: as encodeURIComponent writes it, lower-case escapes, form style. */
function percentForms(value: string): string[] {
  let encoded: string;
  try {
    encoded = encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be percent-encoded, so it cannot appear that way either.
    return [];
  }
  const lower = encoded.replace(/%[0-9A-F]{2}/g, (sequence) => sequence.toLowerCase());
  return [encoded, lower, new URLSearchParams({ v: value }).toString().slice(2)];
}

/** Every form of one value the log could show it in. */
function formsOf(value: string): string[] {
  const bytes = Buffer.from(value);
  const hex = bytes.toString("hex");
  const encoded = [...base64Forms(bytes), hex, hex.toUpperCase(), ...percentForms(value)];
  const lines = value.includes("\n") ? value.split(/\r?\n/).map((line) => line.trim()) : [];
  return [
    value,
    JSON.stringify(value).slice(1, -1),
    ...[...encoded, ...lines].filter((form) => form.length >= MIN_VARIANT_LENGTH),
  ];
}

/**
 * The byte strings to hide for a set of sensitive values: each value as is; as it appears inside
 * a JSON/HCL string (escaped quotes and newlines, as terraform prints it); its base64 (standard
 * and URL-safe, alone or inside a longer base64 text), hex (either case) and percent-encoded
 * forms; and each line of a multi-line value (engines print those line by line). Lines and
 * encoded forms shorter than {@link MIN_VARIANT_LENGTH} characters are left out; empty values
 * are dropped.
 */
export function secretVariants(values: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const value of values) {
    if (value === "") {
      continue;
    }
    for (const form of formsOf(value)) {
      out.add(form);
    }
  }
  return [...out].filter((v) => v !== "");
}

/**
 * Streaming masker: bytes in, bytes out, every occurrence of a secret replaced by `***`, also
 * when a secret is split across writes. It holds back at most (longest secret − 1) bytes — only
 * a tail that could still grow into a secret — until more input or {@link end} arrives.
 * Overlapping matches resolve leftmost-first, longest at the same position.
 */
export class StreamMasker {
  private secrets: Buffer[] = [];
  private maxLength = 0;
  private tail: Buffer = Buffer.alloc(0);

  constructor(secrets: Iterable<string>) {
    this.add(secrets);
  }

  /**
   * Masks `secrets` too from now on: in the held tail and everything written later (bytes
   * already returned are final).
   */
  add(secrets: Iterable<string>): void {
    const known = new Set(this.secrets.map((s) => s.toString()));
    const added = [...new Set(secrets)].filter((s) => s !== "" && !known.has(s));
    // Longest first so that at equal start positions the longest secret wins.
    this.secrets = [...this.secrets, ...added.map((s) => Buffer.from(s))].sort(
      (a, b) => b.length - a.length,
    );
    this.maxLength = this.secrets[0]?.length ?? 0;
  }

  /** Masks what can be decided now; the returned bytes are final. */
  write(chunk: Uint8Array): Buffer {
    return this.process(Buffer.concat([this.tail, chunk]), false);
  }

  /** Flushes the held tail (no more input will come). */
  end(): Buffer {
    return this.process(this.tail, true);
  }

  private process(pending: Buffer, isFinal: boolean): Buffer {
    if (this.secrets.length === 0) {
      this.tail = Buffer.alloc(0);
      return pending;
    }
    const out: Buffer[] = [];
    let i = 0;
    for (;;) {
      const hold = isFinal ? pending.length : this.holdPoint(pending, i);
      const match = this.earliestMatch(pending, i);
      if (match !== null && match.start < hold) {
        out.push(pending.subarray(i, match.start), MASK_BYTES);
        i = match.start + match.length;
        continue;
      }
      out.push(pending.subarray(i, hold));
      this.tail = Buffer.from(pending.subarray(hold));
      return Buffer.concat(out);
    }
  }

  /** First position ≥ from whose remainder is a proper prefix of some secret (else the end). */
  private holdPoint(pending: Buffer, from: number): number {
    const start = Math.max(from, pending.length - this.maxLength + 1);
    for (let j = start; j < pending.length; j++) {
      const rest = pending.subarray(j);
      if (
        this.secrets.some((s) => s.length > rest.length && s.subarray(0, rest.length).equals(rest))
      ) {
        return j;
      }
    }
    return pending.length;
  }

  private earliestMatch(pending: Buffer, from: number): { start: number; length: number } | null {
    let best: { start: number; length: number } | null = null;
    for (const secret of this.secrets) {
      const at = pending.indexOf(secret, from);
      if (at >= 0 && (best === null || at < best.start)) {
        best = { start: at, length: secret.length };
      }
    }
    return best;
  }
}
