import { describe, expect, it } from "vitest";
import { loadKeyring, open, seal, sealedKeyId } from "../../src/lib/encryption.ts";

function keyMaterial(fill: number): string {
  return btoa(String.fromCharCode(...new Uint8Array(32).fill(fill)));
}

async function keyring(secret: string) {
  const loaded = await loadKeyring(secret);
  if (!loaded.ok) {
    throw new Error(`keyring: ${loaded.reason}`);
  }
  return loaded.value;
}

describe("loadKeyring", () => {
  it("parses one or more keyId:base64 entries; the first one encrypts", async () => {
    const ring = await keyring(`new:${keyMaterial(2)}, old:${keyMaterial(1)}`);
    expect(ring.primaryId).toBe("new");
    expect([...ring.keys.keys()]).toEqual(["new", "old"]);
  });

  it("refuses missing, malformed, short and duplicate keys with a reason", async () => {
    const cases: [string | undefined, string][] = [
      [undefined, "missing"],
      ["", "missing"],
      ["   ", "missing"],
      ["nokey", "malformed"],
      [`:${keyMaterial(1)}`, "malformed"],
      [`bad id:${keyMaterial(1)}`, "malformed"],
      ["k1:not base64!", "malformed"],
      [`k1:${keyMaterial(1)}:extra`, "malformed"],
      [`k1:${keyMaterial(1)},`, "malformed"],
      [`k1:${btoa("short")}`, "wrong_key_length"],
      [`k1:${btoa("x".repeat(16))}`, "wrong_key_length"],
      [`k1:${btoa("x".repeat(33))}`, "wrong_key_length"],
      [`k1:${keyMaterial(1)},k1:${keyMaterial(2)}`, "duplicate_key_id"],
    ];
    for (const [secret, reason] of cases) {
      const loaded = await loadKeyring(secret);
      expect(loaded, String(secret)).toEqual({ ok: false, reason });
    }
  });
});

describe("seal and open", () => {
  it("round-trips, with a fresh IV each time and the key id inside", async () => {
    const ring = await keyring(`k1:${keyMaterial(7)}`);
    const a = await seal(ring, "hunter2 ✓", "row-1");
    const b = await seal(ring, "hunter2 ✓", "row-1");
    expect(a.keyId).toBe("k1");
    expect(a.sealed).not.toBe(b.sealed);
    expect(a.sealed).not.toContain("hunter2");
    expect(a.sealed).toMatch(/^v1:k1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(sealedKeyId(a.sealed)).toBe("k1");
    expect(await open(ring, a.sealed, "row-1")).toEqual({ ok: true, value: "hunter2 ✓" });
    expect(await open(ring, b.sealed, "row-1")).toEqual({ ok: true, value: "hunter2 ✓" });
    expect(await open(ring, (await seal(ring, "", "r")).sealed, "r")).toEqual({
      ok: true,
      value: "",
    });
  });

  it("refuses other associated data, tampered bytes, unknown keys and garbage", async () => {
    const ring = await keyring(`k1:${keyMaterial(7)}`);
    const { sealed } = await seal(ring, "secret", "row-1");
    expect(await open(ring, sealed, "row-2")).toEqual({ ok: false, reason: "tampered" });
    const parts = sealed.split(":");
    const data = atob(parts[3] ?? "");
    const flipped = String.fromCharCode(data.charCodeAt(0) ^ 1) + data.slice(1);
    const tampered = [parts[0], parts[1], parts[2], btoa(flipped)].join(":");
    expect(await open(ring, tampered, "row-1")).toEqual({ ok: false, reason: "tampered" });
    const otherRing = await keyring(`k2:${keyMaterial(8)}`);
    expect(await open(otherRing, sealed, "row-1")).toEqual({ ok: false, reason: "unknown_key" });
    const sameIdOtherKey = await keyring(`k1:${keyMaterial(9)}`);
    expect(await open(sameIdOtherKey, sealed, "row-1")).toEqual({ ok: false, reason: "tampered" });
    for (const garbage of ["", "plain", "v2:k1:AAAA:AAAA", "v1:k1:AAAA:AAAA", `${sealed}:x`]) {
      expect(await open(ring, garbage, "row-1"), garbage).toEqual({
        ok: false,
        reason: "malformed",
      });
    }
    expect(sealedKeyId("plain")).toBeNull();
  });

  it("decrypts with every key of a rotated keyring and encrypts with the first", async () => {
    const before = await keyring(`old:${keyMaterial(1)}`);
    const { sealed } = await seal(before, "value", "row");
    const rotated = await keyring(`new:${keyMaterial(2)},old:${keyMaterial(1)}`);
    expect(await open(rotated, sealed, "row")).toEqual({ ok: true, value: "value" });
    const resealed = await seal(rotated, "value", "row");
    expect(resealed.keyId).toBe("new");
    const onlyNew = await keyring(`new:${keyMaterial(2)}`);
    expect(await open(onlyNew, resealed.sealed, "row")).toEqual({ ok: true, value: "value" });
    expect(await open(onlyNew, sealed, "row")).toEqual({ ok: false, reason: "unknown_key" });
  });
});
