/**
 * Dashboard actions: what each role sees and may do (the server checks again), runs and why they
 * wait, force-cancel timing, locks, write-only variables, one-time agent tokens and typed revocation.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { installCommands } from "../../src/agents/install-commands.ts";
import { requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn, type UiSession } from "./helpers/ui.ts";

let org: TestOrg;
let owner: UiSession;
let admin: UiSession;
let member: UiSession;
let reader: UiSession;

beforeAll(async () => {
  org = await seedOrg();
  [owner, admin, member, reader] = await Promise.all([
    signIn(org.ownerToken),
    signIn(org.tokens.admin),
    signIn(org.tokens.member),
    signIn(org.tokens.reader),
  ]);
});

const escapeHtml = (text: string) =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");

describe("roles", () => {
  it("shows the create-pool form to owners only and refuses it from others, changing nothing", async () => {
    expect(await (await owner.get("/ui/pools")).text()).toContain('action="/ui/pools"');
    expect(await (await admin.get("/ui/pools")).text()).not.toContain('action="/ui/pools"');
    const before = await snapshotD1();
    for (const session of [admin, member, reader]) {
      const res = await session.post("/ui/pools", { name: "not-allowed" });
      expect(res.status).toBe(403);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("keeps org tokens to owners", async () => {
    expect(await (await owner.get("/ui/pools")).text()).toContain('href="/ui/tokens"');
    expect(await (await admin.get("/ui/pools")).text()).not.toContain('href="/ui/tokens"');
    expect((await owner.get("/ui/tokens")).status).toBe(200);
    expect((await admin.get("/ui/tokens")).status).toBe(403);
    expect((await member.post("/ui/tokens", { description: "x", role: "owner" })).status).toBe(403);
  });

  it("shows workspace settings to admins, run queueing to members, neither to readers", async () => {
    const { workspace } = await runnableWorkspace(org);
    const path = `/ui/workspaces/${workspace.id}`;
    const adminHtml = await (await admin.get(path)).text();
    expect(adminHtml).toContain(`action="${path}/settings"`);
    expect(adminHtml).toContain(`action="${path}/vars"`);
    const memberHtml = await (await member.get(path)).text();
    expect(memberHtml).not.toContain(`action="${path}/settings"`);
    expect(memberHtml).toContain(`action="${path}/runs"`);
    const readerHtml = await (await reader.get(path)).text();
    expect(readerHtml).not.toContain(`action="${path}/runs"`);
    expect(readerHtml).not.toContain(`action="${path}/lock"`);
    expect(
      (await member.post(`${path}/settings`, { executionMode: "local", poolId: "" })).status,
    ).toBe(403);
    expect((await reader.post(`${path}/runs`, { operation: "apply" })).status).toBe(403);
    expect((await reader.post(`${path}/lock`)).status).toBe(403);
  });

  it("lets an admin change the execution mode through the same rules as the API", async () => {
    const { workspace, poolId } = await runnableWorkspace(org);
    const path = `/ui/workspaces/${workspace.id}`;
    const bad = await admin.post(`${path}/settings`, { executionMode: "agent", poolId: "" });
    expect(bad.status).toBe(400);
    const res = await admin.post(`${path}/settings`, { executionMode: "local", poolId: "" });
    expect(res.status).toBe(303);
    const ws = await requestJson<{ executionMode: string; poolId: string | null }>(
      `/api/v1/workspaces/${workspace.id}`,
      { token: org.tokens.reader },
    );
    expect(ws.body).toMatchObject({ executionMode: "local", poolId: null });
    await admin.post(`${path}/settings`, { executionMode: "agent", poolId });
  });

  it("queues a run as a member, confirms it, and refuses the reader's confirm", async () => {
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const queued = await member.post(`/ui/workspaces/${workspace.id}/runs`, {
      operation: "apply",
      message: "from the dashboard",
    });
    expect(queued.status).toBe(303);
    const runPath = queued.headers.get("location") ?? "";
    expect(runPath).toMatch(/^\/ui\/runs\/run_[a-z2-7]{26}$/);
    const runId = runPath.split("/").pop() ?? "";
    await agent.plan(true);
    const page = await (await member.get(runPath)).text();
    expect(page).toContain("Confirm and apply");
    expect(page).toContain("1 to add, 0 to change, 0 to destroy");
    expect(await (await reader.get(runPath)).text()).not.toContain("Confirm and apply");
    expect((await reader.post(`${runPath}/confirm`)).status).toBe(403);
    expect((await getRun(org, runId)).status).toBe("planned");
    const confirmed = await member.post(`${runPath}/confirm`);
    expect(confirmed.status).toBe(303);
    expect((await getRun(org, runId)).status).toBe("apply_queued");
    const again = await member.post(`${runPath}/discard`);
    expect(again.status).toBe(409);
  });
});

describe("run page", () => {
  const clock = useTestClock();

  it("says why a run waits, in the same words as the API", async () => {
    const { workspace } = await runnableWorkspace(org);
    const run = await queueRun(org, workspace.id);
    const reason = (await getRun(org, run.body.id)).waitingReason;
    expect(reason).toBeTruthy();
    const html = await (await reader.get(`/ui/runs/${run.body.id}`)).text();
    expect(html).toContain(escapeHtml(reason ?? ""));
  });

  it("offers force-cancel only 10 s after a cancel, and the server holds the same line", async () => {
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    const path = `/ui/runs/${run.body.id}`;
    expect((await member.post(`${path}/cancel`)).status).toBe(303);
    const canceling = await (await member.get(path)).text();
    expect(canceling).not.toContain("Force cancel</button>");
    expect(canceling).toContain("force cancel becomes available 10 s after the cancel");
    expect((await member.post(`${path}/force-cancel`)).status).toBe(409);
    clock.advance(11_000);
    expect(await (await member.get(path)).text()).toContain("Force cancel</button>");
    expect((await reader.post(`${path}/force-cancel`)).status).toBe(403);
    expect((await member.post(`${path}/force-cancel`)).status).toBe(303);
    expect((await getRun(org, run.body.id)).status).toBe("force_canceled");
  });
});

describe("workspace lock", () => {
  it("locks and unlocks for a member, through the lock rules", async () => {
    const { workspace } = await runnableWorkspace(org);
    const path = `/ui/workspaces/${workspace.id}`;
    expect((await member.post(`${path}/lock`)).status).toBe(303);
    const html = await (await reader.get(path)).text();
    expect(html).toContain("locked by");
    expect(html).toContain("locked from the dashboard");
    expect((await member.post(`${path}/unlock`)).status).toBe(303);
    expect(await (await reader.get(path)).text()).toContain("unlocked");
  });
});

describe("variables", () => {
  it("never renders a sensitive value, and replaces it write-only", async () => {
    const { workspace } = await runnableWorkspace(org);
    const path = `/ui/workspaces/${workspace.id}`;
    const secret = "s3cr3t-value-never-shown";
    const set = await admin.post(`${path}/vars`, {
      key: "DB_PASSWORD",
      value: secret,
      category: "env",
      sensitive: "on",
    });
    expect(set.status).toBe(303);
    const html = await (await admin.get(path)).text();
    expect(html).toContain("DB_PASSWORD");
    expect(html).toContain("sensitive (write-only)");
    expect(html).not.toContain(secret);
    expect(
      (await member.post(`${path}/vars`, { key: "X", value: "1", category: "env" })).status,
    ).toBe(403);
    const deleted = await admin.post(`${path}/vars/env/DB_PASSWORD/delete`);
    expect(deleted.status).toBe(303);
    expect(await (await admin.get(path)).text()).not.toContain("DB_PASSWORD");
  });
});

describe("agent tokens", () => {
  it("shows a new token once with its install command, and revokes only on the typed description", async () => {
    const created = await owner.post("/ui/pools", { name: "tokens-pool" });
    const poolPath = created.headers.get("location") ?? "";
    const res = await owner.post(`${poolPath}/tokens`, { description: "rack 7" });
    expect(res.status).toBe(201);
    const html = await res.text();
    const secret = /(op_agent_[A-Za-z0-9_-]{43})/.exec(html)?.[1] ?? "";
    expect(secret).not.toBe("");
    // The deployment's PUBLIC_URL (https), not the request's origin (http://outpost.test).
    const commands = installCommands(env.PUBLIC_URL, secret);
    for (const [id, text] of [
      ["install-script", commands.script],
      ["install-systemd", commands.systemd],
      ["install-container", commands.container],
    ]) {
      const escaped = escapeHtml(text ?? "").replaceAll("'", "&#39;");
      expect(html).toContain(`id="${id}" class="mono">${escaped}</pre>`);
    }
    expect(commands.script).toBe(
      [
        "curl -fsSL -o install.sh 'https://outpost.test/agent/v1/install.sh'",
        'sh install.sh --prefix "$HOME/.outpost-agent"',
        `OUTPOST_ADDRESS='https://outpost.test' OUTPOST_TOKEN='${secret}' "$HOME/.outpost-agent/bin/outpost-agent"`,
      ].join("\n"),
    );
    expect(commands.systemd).toContain(
      `echo '${secret}' | sudo sh install.sh --systemd --token-stdin`,
    );
    expect(commands.container).toContain(`-e OUTPOST_TOKEN='${secret}' outpost-agent`);
    expect(html).not.toContain("npx");
    expect(html).toContain('data-copy="new-token"');
    const later = await (await owner.get(poolPath)).text();
    expect(later).toContain("rack 7");
    expect(later).not.toContain(secret);
    const tokenId = /tokens\/(atok_[a-z2-7]{26})\/revoke/.exec(later)?.[1] ?? "";
    const wrong = await owner.post(`${poolPath}/tokens/${tokenId}/revoke`, { confirm: "rack 8" });
    expect(wrong.status).toBe(400);
    const agent = await requestJson("/agent/v1/register", {
      method: "POST",
      token: secret,
      body: { version: "0.1.0", os: "linux", arch: "amd64" },
    });
    expect(agent.status).toBe(201);
    const right = await owner.post(`${poolPath}/tokens/${tokenId}/revoke`, { confirm: "rack 7" });
    expect(right.status).toBe(303);
    const after = await requestJson("/agent/v1/register", {
      method: "POST",
      token: secret,
      body: { version: "0.1.0", os: "linux", arch: "amd64" },
    });
    expect(after.status).toBe(401);
  });
});
