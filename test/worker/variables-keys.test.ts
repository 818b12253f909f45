/**
 * Sensitive variables under a changing ENCRYPTION_KEY: missing key, rotation, re-encryption, and
 * ciphertext moved between rows. The app runs with an overridden env through `app.request`.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { newId } from "@outpost/common";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { variables } from "../../src/db/schema.ts";
import { systemClock } from "../../src/deps.ts";
import { MAX_VARIABLES_PER_WORKSPACE } from "../../src/variables/model.ts";
import { putVariable } from "../../src/variables/service.ts";
import type { ErrorBody } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, deps, seedOrg, type TestOrg, tokenActor } from "./helpers/fixtures.ts";
import { reencryptWith } from "./helpers/keys.ts";
import { createWorkspace, jobVariablesOf } from "./helpers/workspaces.ts";

const OLD = env.ENCRYPTION_KEY;
const NEW_KEY = `k2:${btoa(String.fromCharCode(...new Uint8Array(32).fill(42)))}`;

async function putWith(
  encryptionKey: string,
  org: TestOrg,
  ws: string,
  key: string,
  body: unknown,
): Promise<{ status: number; body: ErrorBody & { id: string } }> {
  const res = await newApp(systemClock).request(
    `/api/v1/workspaces/${ws}/vars/${key}`,
    {
      method: "PUT",
      headers: { authorization: `Bearer ${org.tokens.admin}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    },
    { ...env, ENCRYPTION_KEY: encryptionKey },
    createExecutionContext(),
  );
  return { status: res.status, body: await res.json() };
}

describe("sensitive variables and the encryption key", () => {
  it("answers 503 without a usable key for sensitive values, and changes nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    for (const key of ["", "k1:tooshort", "garbage"]) {
      const before = await snapshotD1();
      const res = await putWith(key, org, ws.id, "SECRET", {
        category: "env",
        value: "v",
        sensitive: true,
      });
      expect(res.status, key).toBe(503);
      expect(res.body.error.code).toBe("UNAVAILABLE");
      expect(await snapshotD1()).toEqual(before);
    }
    // Plain variables need no key.
    expect((await putWith("", org, ws.id, "PLAIN", { category: "env", value: "v" })).status).toBe(
      201,
    );
    await putWith(OLD, org, ws.id, "SECRET", { category: "env", value: "v", sensitive: true });
    await expect(jobVariablesOf({ ENCRYPTION_KEY: "" }, ws.id, true)).rejects.toThrow(
      /ENCRYPTION_KEY is not set/,
    );
    // Without sensitive variables no key is needed.
    expect(await jobVariablesOf({ ENCRYPTION_KEY: "" }, ws.id, false)).toHaveLength(1);
  });

  it("rotates: new writes use the first key, old values still decrypt, re-encryption moves them", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const old = await putWith(OLD, org, ws.id, "OLD_SECRET", {
      category: "env",
      value: "sealed-with-k1",
      sensitive: true,
    });
    const rotated = `${NEW_KEY},${OLD}`;
    const fresh = await putWith(rotated, org, ws.id, "NEW_SECRET", {
      category: "env",
      value: "sealed-with-k2",
      sensitive: true,
    });
    expect(fresh.status).toBe(201);
    const keyIds = async () =>
      Object.fromEntries(
        (await db.select().from(variables).where(eq(variables.workspaceId, ws.id))).map((r) => [
          r.key,
          r.keyId,
        ]),
      );
    expect(await keyIds()).toEqual({ OLD_SECRET: "k1", NEW_SECRET: "k2" });
    const values = async (key: string) =>
      (await jobVariablesOf({ ENCRYPTION_KEY: key }, ws.id, true))
        .map((v) => `${v.key}=${v.value}`)
        .sort();
    expect(await values(rotated)).toEqual([
      "NEW_SECRET=sealed-with-k2",
      "OLD_SECRET=sealed-with-k1",
    ]);
    await expect(values(NEW_KEY)).rejects.toThrow(/OLD_SECRET.*unknown_key.*k1/);

    const updatedAtBefore = (
      await db.query.variables.findFirst({ where: eq(variables.id, old.body.id) })
    )?.updatedAt;
    // Another organization's secret under k1: its owner rotates it, not this one.
    const other = await seedOrg();
    const otherWs = await createWorkspace(other);
    await putWith(OLD, other, otherWs.id, "THEIRS", {
      category: "env",
      value: "v",
      sensitive: true,
    });
    // The operator's step (POST /api/v1/organization/reencrypt, `outpost admin reencrypt`): every
    // row of the organization sealed with k1, in any of its workspaces, moves to k2.
    const sealedWithK1 = await env.DB.prepare(
      "SELECT count(*) AS n FROM variables WHERE key_id = 'k1' AND org_id = ?",
    )
      .bind(org.orgId)
      .first<{ n: number }>();
    expect(sealedWithK1?.n).toBeGreaterThanOrEqual(1);
    const first = await reencryptWith(rotated, org.ownerToken);
    expect(first.status).toBe(200);
    expect(first.body.variables).toEqual({ reencrypted: sealedWithK1?.n, remaining: 0 });
    expect((await reencryptWith(rotated, org.ownerToken)).body.variables).toEqual({
      reencrypted: 0,
      remaining: 0,
    });
    expect(await keyIds()).toEqual({ OLD_SECRET: "k2", NEW_SECRET: "k2" });
    const theirs = await db.query.variables.findFirst({
      where: eq(variables.workspaceId, otherWs.id),
    });
    expect(theirs?.keyId).toBe("k1");
    expect(await values(NEW_KEY)).toEqual([
      "NEW_SECRET=sealed-with-k2",
      "OLD_SECRET=sealed-with-k1",
    ]);
    const after = await db.query.variables.findFirst({ where: eq(variables.id, old.body.id) });
    expect(after?.updatedAt).toBe(updatedAtBefore);
  });

  it("a write racing a workspace delete answers not_found, not a 500", async () => {
    const org = await seedOrg();
    const result = await putVariable(deps, {
      orgId: org.orgId,
      workspaceId: `ws_${"z".repeat(26)}`,
      key: "X",
      write: { category: "env", value: "v", hcl: false, sensitive: false, description: "" },
      actor: tokenActor("test"),
      encryptionKey: OLD,
    });
    expect(result).toEqual({
      ok: false,
      reason: { kind: "not_found", message: "variable X not found" },
    });
  });

  it("a ciphertext copied onto another variable does not decrypt", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const a = await putWith(OLD, org, ws.id, "A", {
      category: "env",
      value: "aaa",
      sensitive: true,
    });
    const b = await putWith(OLD, org, ws.id, "B", {
      category: "env",
      value: "bbb",
      sensitive: true,
    });
    const rowA = await db.query.variables.findFirst({ where: eq(variables.id, a.body.id) });
    await db
      .update(variables)
      .set({ ciphertext: rowA?.ciphertext ?? null })
      .where(eq(variables.id, b.body.id));
    await expect(jobVariablesOf(env, ws.id, true)).rejects.toThrow(
      /env\/B cannot be decrypted \(tampered/,
    );
  });

  it(`refuses a variable beyond ${MAX_VARIABLES_PER_WORKSPACE} per workspace with 409`, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const now = Date.now();
    const rows = Array.from({ length: MAX_VARIABLES_PER_WORKSPACE }, (_, i) => ({
      id: newId("variable"),
      orgId: org.orgId,
      workspaceId: ws.id,
      key: `V${i}`,
      category: "env" as const,
      value: "x",
      updatedAt: now,
    }));
    for (let i = 0; i < rows.length; i += 50) {
      const [head, ...tail] = rows.slice(i, i + 50).map((row) => db.insert(variables).values(row));
      if (head) {
        await db.batch([head, ...tail]);
      }
    }
    const before = await snapshotD1();
    const res = await putWith(OLD, org, ws.id, "ONE_MORE", { category: "env", value: "x" });
    expect(res.status).toBe(409);
    expect(await snapshotD1()).toEqual(before);
    // Replacing an existing one is still allowed.
    expect((await putWith(OLD, org, ws.id, "V1", { category: "env", value: "y" })).status).toBe(
      200,
    );
  });
});
