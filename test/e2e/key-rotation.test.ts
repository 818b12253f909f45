/**
 * Key rotation as an operator runs it: the real `outpost admin reencrypt` against a real local
 * coordinator whose ENCRYPTION_KEY changes between restarts on the same state. Secrets sealed
 * under k1 are re-sealed under k2 while both are in the ring; with k1 dropped afterwards they
 * still open. An organization that did not run the step is told its secrets no longer open.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { afterAll, expect, it } from "vitest";
import { CLI_EXIT } from "../../agent/src/cli/errors.ts";
import { type LocalCoordinator, startCoordinator } from "../../scripts/local-coordinator.ts";
import { CLI_BIN } from "./helpers/e2e.ts";

const key = (id: string, fill: number) => `${id}:${Buffer.alloc(32, fill).toString("base64")}`;
const K1 = key("k1", 1);
const K2 = key("k2", 2);

const home = mkdtempSync(path.join(tmpdir(), "outpost-rotation-"));
const persistDir = path.join(home, "state");
let coordinator: LocalCoordinator | null = null;

afterAll(async () => {
  await coordinator?.dispose();
  rmSync(home, { recursive: true, force: true });
});

/** The coordinator on the same state, restarted with `encryptionKey`. */
async function deployWith(encryptionKey: string): Promise<LocalCoordinator> {
  await coordinator?.stop();
  coordinator = await startCoordinator({
    persistDir,
    vars: { ENCRYPTION_KEY: encryptionKey, ALLOW_MULTIPLE_ORGS: "true" },
  });
  return coordinator;
}

async function api(
  c: LocalCoordinator,
  token: string,
  method: string,
  route: string,
  body?: unknown,
) {
  const res = await fetch(`${c.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** An organization's secrets: two sensitive variables and a webhook, all sealed now. */
async function seedSecrets(c: LocalCoordinator, token: string, name: string) {
  const ws = await api(c, token, "POST", "/api/v1/workspaces", {
    name,
    executionMode: "local",
    engineVersion: "1.9.5",
  });
  expect(ws.status, JSON.stringify(ws.body)).toBe(201);
  for (const variable of ["A", "B"]) {
    const put = await api(c, token, "PUT", `/api/v1/workspaces/${ws.body.id}/vars/${variable}`, {
      category: "env",
      value: `${variable}-value`,
      sensitive: true,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(201);
  }
  const hook = await api(c, token, "POST", "/api/v1/vcs-hooks", { provider: "github" });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  return { hookId: String(hook.body.id), secret: String(hook.body.secret) };
}

/** A signed GitHub ping: 200 when the coordinator can open the hook's secret, else 401. */
async function ping(c: LocalCoordinator, hook: { hookId: string; secret: string }) {
  const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
  const res = await fetch(`${c.url}/webhooks/github/${hook.hookId}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(hook.secret, body),
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** `outpost admin reencrypt` as an operator runs it in CI: address and token from the env. */
function reencrypt(c: LocalCoordinator, token: string, args: string[] = []) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, "admin", "reencrypt", ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        OUTPOST_ADDRESS: c.url,
        OUTPOST_TOKEN: token,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 45_000);
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

it("rotates ENCRYPTION_KEY with `outpost admin reencrypt`, so the old key can be dropped", async () => {
  // Deployed with k1: two organizations keep secrets.
  let c = await deployWith(K1);
  const owner = await c.bootstrap("rotation");
  const ours = await seedSecrets(c, owner, "ours");
  const other = await api(c, owner, "POST", "/api/v1/organizations", { name: "other" });
  expect(other.status).toBe(201);
  const otherOwner = String((other.body.token as { token: string }).token);
  const theirs = await seedSecrets(c, otherOwner, "theirs");

  // k2 put first, k1 kept: the step moves this organization's secrets, one value per request.
  c = await deployWith(`${K2},${K1}`);
  const misuse = await reencrypt(c, owner, ["--batch", "0"]);
  expect(misuse.code).toBe(CLI_EXIT.usage);
  expect(misuse.stderr).toBe("outpost: --batch must be a whole number from 1 to 500\n");
  const rotated = await reencrypt(c, owner, ["--batch", "1", "--json"]);
  expect(rotated.code, rotated.stderr).toBe(CLI_EXIT.ok);
  expect(JSON.parse(rotated.stdout)).toEqual({
    variables: { reencrypted: 2, remaining: 0 },
    webhookSecrets: { reencrypted: 1, remaining: 0 },
  });
  expect(rotated.stderr).toMatch(/re-encrypted \d+; \d+ to go/);
  expect(rotated.stderr).toMatch(/drop the old key/);

  // k1 dropped: this organization's secrets still open; nothing is left to re-encrypt.
  c = await deployWith(K2);
  expect(await ping(c, ours)).toBe(200);
  const again = await reencrypt(c, owner);
  expect(again.code, again.stderr).toBe(CLI_EXIT.ok);
  expect(again.stdout).toBe(
    "Re-encrypted 0 sensitive variable(s) and 0 webhook secret(s) with the first key of ENCRYPTION_KEY\n",
  );
  // The organization that did not run the step is told, and its webhook no longer verifies.
  expect(await ping(c, theirs)).toBe(401);
  const late = await reencrypt(c, otherOwner);
  expect(late.code).toBe(CLI_EXIT.requestFailed);
  expect(late.stderr).toContain(
    "2 sensitive variable(s) and 1 webhook secret(s) are still sealed with another key",
  );
}, 180_000);
