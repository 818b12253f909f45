import { describe, expect, it } from "vitest";
import { MIN_VARIANT_LENGTH, StreamMasker, secretVariants } from "../../agent/src/logs/masker.ts";

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
    const variants = secretVariants(['a"b', "", "line one\nline two\nx"]);
    expect(variants).toEqual(
      expect.arrayContaining([
        'a"b',
        'a\\"b',
        "line one",
        "line one\\nline two\\nx",
        "line one\nline two\nx",
        "line two",
      ]),
    );
    expect(variants).not.toContain("");
    // Lines shorter than MIN_VARIANT_LENGTH are not masked on their own (documented).
    expect(variants).not.toContain("x");
  });

  it("adds base64 (standard, URL-safe, at every alignment), hex and percent-encoded forms", () => {
    const secret = "db-P@ss w0rd/+?&=é";
    const bytes = Buffer.from(secret);
    const variants = secretVariants([secret]);
    expect(variants).toEqual(
      expect.arrayContaining([
        bytes.toString("base64"),
        bytes.toString("base64url"),
        bytes.toString("hex"),
        bytes.toString("hex").toUpperCase(),
        encodeURIComponent(secret),
        new URLSearchParams({ v: secret }).toString().slice(2),
      ]),
    );
    expect(variants.every((v) => v === secret || v.length >= MIN_VARIANT_LENGTH)).toBe(true);
  });
});

/**
 * Finding 8 of the least-privilege review: the log showed a sensitive value's encodings, lines
 * of a multi-line value and hook exports. Each form is masked with a chunk boundary at every
 * byte inside it.
 */
describe("masking every form of a sensitive value, split at every byte inside it", () => {
  const secret = "db-P@ss w0rd/+?&=é-0123456789";
  const bytes = Buffer.from(secret);
  const forms: Record<string, string> = {
    "the value": secret,
    "JSON-escaped": JSON.stringify(secret).slice(1, -1),
    base64: bytes.toString("base64"),
    "base64 without padding": bytes.toString("base64").replace(/=+$/, ""),
    "URL-safe base64": bytes.toString("base64url"),
    "lower-case hex": bytes.toString("hex"),
    "upper-case hex": bytes.toString("hex").toUpperCase(),
    "percent-encoded": encodeURIComponent(secret),
    "percent-encoded, lower-case escapes": encodeURIComponent(secret).replace(
      /%[0-9A-F]{2}/g,
      (e) => e.toLowerCase(),
    ),
    "form-encoded": new URLSearchParams({ v: secret }).toString().slice(2),
  };
  for (const [name, form] of Object.entries(forms)) {
    it(`masks its ${name} form`, () => {
      const text = `before ${form} after\n`;
      const from = Buffer.byteLength("before ");
      for (let cut = from; cut <= from + Buffer.byteLength(form); cut++) {
        expect(maskAll(secretVariants([secret]), text, [cut]), `cut at ${cut}`).toBe(
          "before *** after\n",
        );
      }
    });
  }

  it("masks the value inside a longer base64 text at every byte alignment", () => {
    for (const [prefix, suffix] of [
      ["", "!"],
      ["a", "!!"],
      ["ab", ""],
      ["abc", "?"],
    ] as const) {
      const blob = Buffer.concat([Buffer.from(prefix), bytes, Buffer.from(suffix)]);
      for (const encoding of ["base64", "base64url"] as const) {
        const text = `blob=${blob.toString(encoding)}\n`;
        const cuts = [...Array(text.length).keys()];
        for (const cut of cuts) {
          const out = maskAll(secretVariants([secret]), text, [cut]);
          expect(out, `${encoding} prefix ${prefix.length} cut ${cut}`).toContain("***");
          // What is left shows at most the 3 edge characters next to the neighbours' bytes.
          const shown = out.replace("blob=", "").replace("\n", "").split("***").join("");
          expect(shown.length, out).toBeLessThanOrEqual(
            Math.ceil(((prefix.length + suffix.length) * 4) / 3) + 6,
          );
        }
      }
    }
  });

  it("masks each line of a multi-line value (4 characters or more), split inside each line", () => {
    const key = "-----BEGIN KEY-----\nMIIEv4Gm9pQ2x\nab\nZq8rT1w0PLus\n-----END KEY-----";
    const printed = "key:\n  MIIEv4Gm9pQ2x\n  ab\n  Zq8rT1w0PLus\ndone\n";
    for (let cut = 0; cut <= printed.length; cut++) {
      expect(maskAll(secretVariants([key]), printed, [cut]), `cut ${cut}`).toBe(
        "key:\n  ***\n  ab\n  ***\ndone\n",
      );
    }
  });

  it("masks secrets added mid-stream (hook exports) in everything written after", () => {
    const masker = new StreamMasker(secretVariants(["first-secret"]));
    const early = masker.write(Buffer.from("first-secret and ")).toString();
    masker.add(secretVariants(["hook-secret-value"]));
    const parts = ["hook-sec", "ret-value, ", Buffer.from("hook-secret-value").toString("hex")];
    const rest = parts.map((p) => masker.write(Buffer.from(p)).toString()).join("");
    expect(early + rest + masker.end().toString()).toBe("*** and ***, ***");
  });
});
