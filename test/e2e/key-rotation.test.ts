/**
 * Key rotation as an operator runs it: the real `outpost admin reencrypt` against a real local
 * coordinator whose ENCRYPTION_KEY changes between restarts on the same state. Secrets sealed
 * under k1 are re-sealed under k2 while both are in the ring; with k1 dropped afterwards they
 * still open. An organization that did not run the step is told its secrets no longer open.
 */
import { sign } from "@octokit/webhooks-methods";
import { beforeAll, expect, it } from "vitest";
import { CLI_EXIT } from "../../agent/src/cli/errors.ts";
import { runCli } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const key = (id: string, fill: number) => `${id}:${Buffer.alloc(32, fill).toString("base64")}`;
const K1 = key("k1", 1);
const K2 = key("k2", 2);

// Deployed with k1; the test redeploys it on the same state with other keys.
const world = useWorld({
  vars: { ENCRYPTION_KEY: K1, ALLOW_MULTIPLE_ORGS: "true" },
  engines: {},
});
let home: string;
beforeAll(() => {
  home = world.freshDir("rotation-home");
});

/** The coordinator redeployed on the same state with `encryptionKey`. */
async function deployWith(encryptionKey: string): Promise<void> {
  await world.coordinator.restart({ ENCRYPTION_KEY: encryptionKey });
}

/** An organization's secrets: two sensitive variables and a webhook, all sealed now. */
async function seedSecrets(token: string, name: string) {
  const ws = await world.apiAs(token, "POST", "/api/v1/workspaces", {
    name,
    executionMode: "local",
    engineVersion: "1.9.5",
  });
  expect(ws.status, JSON.stringify(ws.body)).toBe(201);
  for (const variable of ["A", "B"]) {
    const put = await world.apiAs(
      token,
      "PUT",
      `/api/v1/workspaces/${ws.body.id}/vars/${variable}`,
      { category: "env", value: `${variable}-value`, sensitive: true },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(201);
  }
  const hook = await world.apiAs(token, "POST", "/api/v1/vcs-hooks", { provider: "github" });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  return { hookId: String(hook.body.id), secret: String(hook.body.secret) };
}

/** A signed GitHub ping: 200 when the coordinator can open the hook's secret, else 401. */
async function ping(hook: { hookId: string; secret: string }) {
  const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${hook.hookId}`, {
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
function reencrypt(token: string, args: string[] = []) {
  return runCli(["admin", "reencrypt", ...args], {
    home,
    env: { OUTPOST_ADDRESS: world.coordinator.url, OUTPOST_TOKEN: token },
  });
}

it("rotates ENCRYPTION_KEY with `outpost admin reencrypt`, so the old key can be dropped", async () => {
  // Deployed with k1: two organizations keep secrets.
  const owner = world.ownerToken;
  const ours = await seedSecrets(owner, "ours");
  const other = await world.api("POST", "/api/v1/organizations", { name: "other" });
  expect(other.status).toBe(201);
  const otherOwner = String((other.body.token as { token: string }).token);
  const theirs = await seedSecrets(otherOwner, "theirs");

  // k2 put first, k1 kept: the step moves this organization's secrets, one value per request.
  await deployWith(`${K2},${K1}`);
  const misuse = await reencrypt(owner, ["--batch", "0"]);
  expect(misuse.code).toBe(CLI_EXIT.usage);
  expect(misuse.stderr).toBe("outpost: --batch must be a whole number from 1 to 500\n");
  const rotated = await reencrypt(owner, ["--batch", "1", "--json"]);
  expect(rotated.code, rotated.stderr).toBe(CLI_EXIT.ok);
  expect(JSON.parse(rotated.stdout)).toEqual({
    variables: { reencrypted: 2, remaining: 0 },
    webhookSecrets: { reencrypted: 1, remaining: 0 },
  });
  expect(rotated.stderr).toMatch(/re-encrypted \d+; \d+ to go/);
  expect(rotated.stderr).toMatch(/drop the old key/);

  // k1 dropped: this organization's secrets still open; nothing is left to re-encrypt.
  await deployWith(K2);
  expect(await ping(ours)).toBe(200);
  const again = await reencrypt(owner);
  expect(again.code, again.stderr).toBe(CLI_EXIT.ok);
  expect(again.stdout).toBe(
    "Re-encrypted 0 sensitive variable(s) and 0 webhook secret(s) with the first key of ENCRYPTION_KEY\n",
  );
  // The organization that did not run the step is told, and its webhook no longer verifies.
  expect(await ping(theirs)).toBe(401);
  const late = await reencrypt(otherOwner);
  expect(late.code).toBe(CLI_EXIT.requestFailed);
  expect(late.stderr).toContain(
    "2 sensitive variable(s) and 1 webhook secret(s) are still sealed with another key",
  );
}, 180_000);
