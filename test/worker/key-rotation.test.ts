/**
 * Key rotation as an operator runs it against a deployed Worker: `POST
 * /api/v1/organization/reencrypt` (what `outpost admin reencrypt` calls) with two keys in the
 * ring seals the organization's sensitive variables and webhook secrets (VCS hooks',
 * notifications') again with the first
 * key, in bounded batches, so the old key can be dropped; owners only, one organization only.
 */

import { env } from "cloudflare:workers";
import { sign } from "@octokit/webhooks-methods";
import { eq } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { notificationConfigurations, variables, vcsHooks } from "../../src/db/schema.ts";
import { sealedKeyId } from "../../src/lib/encryption.ts";
import { openHookApp, openHookToken } from "../../src/vcs-feedback/credentials.ts";
import type { RegisteredApp } from "../setup/fake-github-app.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { NEW_KEY, OLD_KEY, ROTATED, reencryptWith, requestWithKey } from "./helpers/keys.ts";
import { createHook, githubExample } from "./helpers/vcs.ts";
import { createWorkspace, jobVariablesOf } from "./helpers/workspaces.ts";

/** A sensitive variable written while the deployment runs with `encryptionKey`. */
async function putSecret(encryptionKey: string, org: TestOrg, ws: string, key: string) {
  const res = await requestWithKey<{ id: string }>(
    encryptionKey,
    `/api/v1/workspaces/${ws}/vars/${key}`,
    {
      method: "PUT",
      headers: { authorization: `Bearer ${org.tokens.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ category: "env", value: `${key}-value`, sensitive: true }),
    },
  );
  expect(res.status).toBe(201);
  return res.body.id;
}

/** A signed GitHub ping to the hook, on a deployment whose ENCRYPTION_KEY is `encryptionKey`. */
async function ping(encryptionKey: string, hook: { id: string }, secret: string) {
  const body = JSON.stringify(githubExample("ping"));
  return requestWithKey(encryptionKey, `/webhooks/github/${hook.id}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });
}

const keyIdOf = async (id: string) =>
  (await db.query.variables.findFirst({ where: eq(variables.id, id) }))?.keyId;

describe("POST /api/v1/organization/reencrypt", () => {
  it("moves the org's variables and webhook secrets to the first key; the old key can then go", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const ids = [
      await putSecret(OLD_KEY, org, ws.id, "A"),
      await putSecret(OLD_KEY, org, ws.id, "B"),
    ];
    const hook = await createHook(org, "github");
    // Rotating a hook's secret keeps the previous one for a grace period: both are sealed.
    const rotatedHook = await requestWithKey<{ secret: string }>(
      OLD_KEY,
      `/api/v1/vcs-hooks/${hook.id}/rotate-secret`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${org.tokens.admin}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ graceSeconds: 3600 }),
      },
    );
    expect(rotatedHook.status).toBe(200);
    const secret = rotatedHook.body.secret;
    // A notification configuration's signing secret is a webhook secret too.
    const notification = await requestWithKey<{ id: string }>(
      OLD_KEY,
      `/api/v1/workspaces/${ws.id}/notifications`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${org.tokens.admin}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ name: "n", url: "https://hooks.example.com/n" }),
      },
    );
    expect(notification.status).toBe(201);
    // Before the rotation, a deployment with only the new key can read none of them.
    expect((await ping(NEW_KEY, hook, secret)).status).toBe(401);
    await expect(jobVariablesOf({ ENCRYPTION_KEY: NEW_KEY }, ws.id, true)).rejects.toThrow(
      /unknown_key/,
    );

    const res = await reencryptWith(ROTATED, org.ownerToken);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      variables: { reencrypted: 2, remaining: 0 },
      webhookSecrets: { reencrypted: 2, remaining: 0 },
    });
    expect(await Promise.all(ids.map(keyIdOf))).toEqual(["k2", "k2"]);
    const config = await db.query.notificationConfigurations.findFirst({
      where: eq(notificationConfigurations.id, notification.body.id),
    });
    expect(sealedKeyId(config?.secretCiphertext ?? "")).toBe("k2");
    const row = await db.query.vcsHooks.findFirst({ where: eq(vcsHooks.id, hook.id) });
    expect(sealedKeyId(row?.secretCiphertext ?? "")).toBe("k2");
    expect(sealedKeyId(row?.previousSecretCiphertext ?? "")).toBe("k2");

    // k1 dropped: everything still opens.
    const values = await jobVariablesOf({ ENCRYPTION_KEY: NEW_KEY }, ws.id, true);
    expect(values.map((v) => `${v.key}=${v.value}`).sort()).toEqual(["A=A-value", "B=B-value"]);
    expect((await ping(NEW_KEY, hook, secret)).status).toBe(200);
    expect((await ping(NEW_KEY, hook, hook.secret)).status).toBe(200);
    // The step is recorded.
    const audit = await db.query.auditEvents.findFirst({
      where: (t, { and, eq: is }) =>
        and(is(t.orgId, org.orgId), is(t.action, "organization.reencrypt")),
    });
    expect(audit).toMatchObject({ actor: org.ownerTokenId, targetId: org.orgId });
  });

  it("moves hooks' VCS credentials (a token, a GitHub App key) too; they then open under the new key", async () => {
    const org = await seedOrg();
    const app = (await (
      await fetch(`${inject("fakeGithubUrl")}/_apps`, { method: "POST" })
    ).json()) as RegisteredApp;
    const hookIds: string[] = [];
    for (const credential of [
      { token: "tok-rotate" },
      { app: { appId: app.appId, privateKey: app.privateKey } },
    ]) {
      const res = await requestWithKey<{ id: string }>(OLD_KEY, "/api/v1/vcs-hooks", {
        method: "POST",
        headers: {
          authorization: `Bearer ${org.tokens.admin}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ provider: "github", feedback: "coordinator", ...credential }),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      hookIds.push(res.body.id);
    }
    const rowOf = async (id: string) => {
      const row = await db.query.vcsHooks.findFirst({ where: eq(vcsHooks.id, id) });
      if (!row) {
        throw new Error(`hook ${id} is gone`);
      }
      return row;
    };
    const newEnv = { ...env, ENCRYPTION_KEY: NEW_KEY };
    expect(await openHookToken(newEnv, await rowOf(hookIds[0] ?? ""))).toBeNull();

    const res = await reencryptWith(ROTATED, org.ownerToken);
    // Two hooks' webhook secrets and their two credentials.
    expect(res.body.webhookSecrets).toEqual({ reencrypted: 4, remaining: 0 });
    const tokenHook = await rowOf(hookIds[0] ?? "");
    const appHook = await rowOf(hookIds[1] ?? "");
    expect(sealedKeyId(tokenHook.tokenCiphertext ?? "")).toBe("k2");
    expect(sealedKeyId(appHook.appKeyCiphertext ?? "")).toBe("k2");
    expect(await openHookToken(newEnv, tokenHook)).toBe("tok-rotate");
    expect(await openHookApp(newEnv, appHook)).toMatchObject({
      appId: app.appId,
      pkcs8Pem: expect.stringContaining("-----BEGIN PRIVATE KEY-----"),
    });
  });

  it("works in bounded batches: each call re-encrypts at most `limit`, until nothing remains", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    for (const key of ["A", "B", "C"]) {
      await putSecret(OLD_KEY, org, ws.id, key);
    }
    const batches = [];
    for (let call = 0; call < 4; call++) {
      const res = await reencryptWith(ROTATED, org.ownerToken, { limit: 2 });
      expect(res.status).toBe(200);
      batches.push(res.body.variables);
    }
    expect(batches).toEqual([
      { reencrypted: 2, remaining: 1 },
      { reencrypted: 1, remaining: 0 },
      { reencrypted: 0, remaining: 0 },
      { reencrypted: 0, remaining: 0 },
    ]);
  });

  it("leaves other organizations' secrets alone", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const theirs = await putSecret(OLD_KEY, other, (await createWorkspace(other)).id, "THEIRS");
    const res = await reencryptWith(ROTATED, org.ownerToken);
    expect(res.body.variables).toEqual({ reencrypted: 0, remaining: 0 });
    expect(await keyIdOf(theirs)).toBe("k1");
  });

  it("counts what the ring can no longer open as remaining, so the operator keeps the old key", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const id = await putSecret(OLD_KEY, org, ws.id, "A");
    // k1 already dropped: nothing opens, nothing changes, and the answer says so.
    const res = await reencryptWith(NEW_KEY, org.ownerToken);
    expect(res.body.variables).toEqual({ reencrypted: 0, remaining: 1 });
    expect(await keyIdOf(id)).toBe("k1");
  });

  it("refuses bad input (400) and a deployment without a usable key (503), changing nothing", async () => {
    const org = await seedOrg();
    await putSecret(OLD_KEY, org, (await createWorkspace(org)).id, "A");
    for (const body of [{ limit: 0 }, { limit: 501 }, { limit: "all" }, { other: true }]) {
      const before = await snapshotD1();
      const res = await reencryptWith(ROTATED, org.ownerToken, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(await snapshotD1()).toEqual(before);
    }
    const before = await snapshotD1();
    const res = await reencryptWith("", org.ownerToken);
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({
      code: "UNAVAILABLE",
      message: "sensitive variables are unavailable: ENCRYPTION_KEY is not set",
    });
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("POST /api/v1/organization/reencrypt", {
  target: () => ({ method: "POST", path: "/api/v1/organization/reencrypt", body: {} }),
  role: "owner",
  hasOrgIds: false,
});
