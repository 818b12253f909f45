import { describe, expect, it } from "vitest";
import { StreamMasker, secretVariants } from "../../agent/src/logs/masker.ts";

/** Deterministic PRNG so a failing property run can be reproduced from its seed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function maskAll(secrets: string[], text: string, cuts: number[]): string {
  const masker = new StreamMasker(secrets);
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  let last = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    parts.push(masker.write(bytes.subarray(last, cut)));
    last = cut;
  }
  parts.push(masker.write(bytes.subarray(last)), masker.end());
  return Buffer.concat(parts).toString();
}

/** Reference: mask the whole text at once, leftmost-first and longest-first. */
function reference(secrets: string[], text: string): string {
  const sorted = [...secrets].sort((a, b) => b.length - a.length);
  let out = "";
  let i = 0;
  while (i < text.length) {
    const hit = sorted.find((s) => text.startsWith(s, i));
    if (hit) {
      out += "***";
      i += hit.length;
    } else {
      out += text[i];
      i += 1;
    }
  }
  return out;
}

describe("StreamMasker", () => {
  it("masks a secret inside one write", () => {
    expect(maskAll(["hunter2"], "password is hunter2.\n", [])).toBe("password is ***.\n");
  });

  it("masks a secret split across two writes at every possible split point", () => {
    const text = 'var.db_password = "s3cr3t-P@ss"\n';
    for (let cut = 0; cut <= Buffer.byteLength(text); cut++) {
      expect(maskAll(["s3cr3t-P@ss"], text, [cut])).toBe('var.db_password = "***"\n');
    }
  });

  it("holds back at most the longest secret minus one byte", () => {
    const masker = new StreamMasker(["abcdef", "xy"]);
    expect(masker.write(Buffer.from("hello abcde")).toString()).toBe("hello ");
    expect(masker.write(Buffer.from("Z")).toString()).toBe("abcdeZ");
    expect(masker.write(Buffer.from("nothing here")).toString()).toBe("nothing here");
    expect(masker.end().toString()).toBe("");
  });

  it("does not leak part of a long secret that contains a shorter one", () => {
    // Emitting the short match early would print "ab***ef" and give most of the secret away.
    expect(maskAll(["abcdef", "cd"], "xxabcdefyy", [4])).toBe("xx***yy");
    expect(maskAll(["abcdef", "cd"], "xxabcdZ", [4])).toBe("xxab***Z");
  });

  it("keeps multi-byte UTF-8 intact around masks", () => {
    expect(maskAll(["pässwörd"], "ünïcödé pässwörd ✓", [11, 12, 13])).toBe("ünïcödé *** ✓");
  });

  it("passes everything through when there are no secrets", () => {
    const masker = new StreamMasker([]);
    expect(masker.write(Buffer.from("plain")).toString()).toBe("plain");
  });

  it("matches the whole-text reference for random texts, secrets and split points", () => {
    const alphabet = "abcx\n";
    for (let seed = 1; seed <= 400; seed++) {
      const rand = prng(seed);
      const word = (min: number, max: number) =>
        Array.from(
          { length: min + Math.floor(rand() * (max - min + 1)) },
          () => alphabet[Math.floor(rand() * alphabet.length)],
        ).join("");
      const secrets = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => word(1, 6));
      const text = Array.from({ length: 6 }, () =>
        rand() < 0.5 ? (secrets[Math.floor(rand() * secrets.length)] ?? "") : word(0, 8),
      ).join("");
      const cuts = Array.from({ length: Math.floor(rand() * 6) }, () =>
        Math.floor(rand() * (text.length + 1)),
      );
      const masked = maskAll(secrets, text, cuts);
      expect(masked, `seed ${seed}`).toBe(reference(secrets, text));
    }
  });
});

describe("secretVariants", () => {
  it("adds the JSON-escaped form and the lines of multi-line values, drops empty ones", () => {
    expect(secretVariants(['a"b', "", "line one\nline two\nx"]).sort()).toEqual(
      [
        'a"b',
        'a\\"b',
        "line one",
        "line one\\nline two\\nx",
        "line one\nline two\nx",
        "line two",
      ].sort(),
    );
  });
});
