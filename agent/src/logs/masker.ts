/** The text that replaces every sensitive value in a job log. */
export const MASK = "***";
const MASK_BYTES = Buffer.from(MASK);

/**
 * The byte strings to hide for a set of sensitive values: each value as is, as it appears
 * inside a JSON/HCL string (escaped quotes and newlines, as terraform prints it), and each
 * line of a multi-line value (engines print those line by line). Empty values are dropped.
 */
export function secretVariants(values: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const value of values) {
    if (value === "") {
      continue;
    }
    out.add(value);
    out.add(JSON.stringify(value).slice(1, -1));
    if (value.includes("\n")) {
      for (const line of value.split(/\r?\n/)) {
        if (line.trim().length >= 4) {
          out.add(line.trim());
        }
      }
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
  private readonly secrets: Buffer[];
  private readonly maxLength: number;
  private tail: Buffer = Buffer.alloc(0);

  constructor(secrets: Iterable<string>) {
    // Longest first so that at equal start positions the longest secret wins.
    this.secrets = [...new Set(secrets)]
      .filter((s) => s !== "")
      .map((s) => Buffer.from(s))
      .sort((a, b) => b.length - a.length);
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
