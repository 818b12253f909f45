/**
 * Dashboard pages: what each role sees and may do (the server checks again), escaping of every
 * user, agent and log string, the CSP header, one-time secrets, typed revocation, live JSON, and
 * another org's ids answering 404.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runs } from "../../src/db/schema.ts";
import { poolStub } from "../../src/pools/service.ts";
import type { JobAssignment } from "../../src/protocol/index.ts";
import { CONTENT_SECURITY_POLICY } from "../../src/ui/routes.tsx";
import { request, requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { advancePoolClock, registerAgent, seedPool } from "./helpers/pools.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn, type UiSession } from "./helpers/ui.ts";

const XSS = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`;

let org: TestOrg;
let other: TestOrg;
let owner: UiSession;
let admin: UiSession;
let member: UiSession;
let reader: UiSession;

beforeAll(async () => {
  org = await seedOrg();
  other = await seedOrg();
  [owner, admin, member, reader] = await Promise.all([
    signIn(org.ownerToken),
    signIn(org.tokens.admin),
    signIn(org.tokens.member),
    signIn(org.tokens.reader),
  ]);
});

function putLog(job: JobAssignment, offset: number, text: string) {
  return request(
    `/agent/v1/jobs/${encodeURIComponent(job.jobId)}/leases/${job.leaseId}/logs?offset=${offset}`,
    {
      method: "PUT",
      token: job.runToken ?? "",
      body: new TextEncoder().encode(text),
      headers: { "content-type": "application/octet-stream" },
    },
  );
}

const escapeHtml = (text: string) =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");

/** Asserts no raw markup from XSS made it into the page, and that it is shown escaped. */
function expectEscaped(html: string) {
  expect(html).not.toContain("<script>window.pwned");
  expect(html).not.toContain("<img src=x");
  expect(html).toContain("&lt;script&gt;window.pwned=1&lt;/script&gt;");
}

describe("headers", () => {
  it("sends a strict CSP, nosniff and no-store on pages, errors, sign-in and live JSON", async () => {
    const responses = [
      await owner.get("/ui/pools"),
      await owner.get("/ui/pools/pool_aaaaaaaaaaaaaaaaaaaaaaaaaa"),
      await owner.get("/ui/pools/pool_aaaaaaaaaaaaaaaaaaaaaaaaaa/live.json"),
      await request("/ui/login"),
    ];
    for (const res of responses) {
      expect(res.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain("unsafe-inline");
  });

  it("has no inline script or style in any page", async () => {
    const html = await (await owner.get("/ui/pools")).text();
    expect(html).toContain('<script src="/ui/static/app.js" defer="">');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style/);
    expect(html).not.toMatch(/\son[a-z]+=/);
    const js = await request("/ui/static/app.js");
    expect(js.headers.get("content-type")).toMatch(/javascript/);
  });
});

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

describe("agent statuses", () => {
  it("shows idle, unknown and errored as the pool's alarm moves the agent, in page and live JSON", async () => {
    const pool = await seedPool(org);
    await registerAgent(pool.token, { name: "rack-9" });
    const path = `/ui/pools/${pool.poolId}`;
    const live = async () =>
      ((await (await reader.get(`${path}/live.json`)).json()) as { fragments: { agents: string } })
        .fragments.agents;
    expect(await live()).toMatch(/status-idle">idle</);
    await advancePoolClock(pool.poolId, 31_000);
    await runDurableObjectAlarm(poolStub(env, pool.poolId));
    expect(await live()).toMatch(/status-unknown">unknown</);
    await advancePoolClock(pool.poolId, 300_000);
    await runDurableObjectAlarm(poolStub(env, pool.poolId));
    const html = await (await reader.get(path)).text();
    expect(html).toMatch(/status-errored">errored</);
    expect(html).toContain("rack-9");
  });
});

describe("run page", () => {
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
    await db
      .update(runs)
      .set({ cancelRequestedAt: Date.now() - 11_000 })
      .where(eq(runs.id, run.body.id));
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
    expect(html).toContain(
      `OUTPOST_ADDRESS=http://outpost.test OUTPOST_TOKEN=${secret} npx outpost-agent`,
    );
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

describe("escaping", () => {
  it("escapes descriptions, agent names, variables, run messages and log lines", async () => {
    const runnable = await runnableWorkspace(org, { description: XSS });
    const poolPath = `/ui/pools/${runnable.poolId}`;
    expect((await owner.post(`${poolPath}/tokens`, { description: XSS })).status).toBe(201);
    const agent = await TestAgent.register(runnable.agentToken, { name: XSS.slice(0, 60) });
    await admin.post(`/ui/workspaces/${runnable.workspace.id}/vars`, {
      key: "note",
      value: XSS,
      category: "terraform",
      description: XSS,
    });
    const run = await queueRun(org, runnable.workspace.id, { message: XSS });
    const job = await agent.lease();
    await agent.start(job);
    const line = `\u001b[1m\u001b[32m${XSS}\u001b[0m done\n`;
    expect((await putLog(job, 0, line)).status).toBe(200);

    const poolHtml = await (await owner.get(poolPath)).text();
    expect(poolHtml).toContain("&lt;script&gt;window.pwned=1");
    expect(poolHtml).not.toContain("<script>window.pwned");
    expectEscaped(await (await owner.get(`/ui/workspaces/${runnable.workspace.id}`)).text());
    const runHtml = await (await owner.get(`/ui/runs/${run.body.id}`)).text();
    expectEscaped(runHtml);
    expect(runHtml).toContain('<span class="ansi-fg-2 ansi-bold">&lt;script&gt;');
    const live = await owner.get(`/ui/pools/${runnable.poolId}/live.json`);
    const fragments = ((await live.json()) as { fragments: { agents: string } }).fragments;
    expect(fragments.agents).toContain("&lt;script&gt;");
    expect(fragments.agents).not.toContain("<script>");
    expect(fragments.agents).toContain("busy");
  });
});

describe("live run endpoint", () => {
  it("answers log lines from an offset, whole lines only, with ANSI as classes", async () => {
    const runnable = await runnableWorkspace(org);
    const agent = await TestAgent.register(runnable.agentToken);
    const run = await queueRun(org, runnable.workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    await putLog(job, 0, "one\n\u001b[31mtwo\u001b[0m\nthr");
    const path = `/ui/runs/${run.body.id}/live.json`;
    const first = (await (await member.get(`${path}?planOffset=0`)).json()) as {
      logs: { phase: string; html: string; nextOffset: number }[];
      fragments: Record<string, string>;
      done: boolean;
    };
    const plan = first.logs.find((l) => l.phase === "plan");
    expect(plan?.html).toBe('one\n<span class="ansi-fg-1">two</span>\n');
    expect(plan?.nextOffset).toBe(17);
    expect(first.fragments["run-summary"]).toContain("planning");
    expect(first.fragments["run-actions"]).toContain("Cancel run");
    expect(first.done).toBe(false);
    const second = (await (await member.get(`${path}?planOffset=17`)).json()) as typeof first;
    expect(second.logs.find((l) => l.phase === "plan")?.html).toBe("");
    expect((await member.get(`${path}?planOffset=-1`)).status).toBe(400);
  });
});

describe("another organization", () => {
  it("answers 404 for its pools, workspaces, runs and tokens, pages and forms alike", async () => {
    const theirs = await runnableWorkspace(other);
    const theirRun = await queueRun(other, theirs.workspace.id);
    const agents = await poolStub(env, theirs.poolId).listAgents();
    expect(agents).toEqual([]);
    const before = await snapshotD1();
    const paths = [
      `/ui/pools/${theirs.poolId}`,
      `/ui/pools/${theirs.poolId}/live.json`,
      `/ui/workspaces/${theirs.workspace.id}`,
      `/ui/runs/${theirRun.body.id}`,
      `/ui/runs/${theirRun.body.id}/live.json`,
    ];
    for (const path of paths) {
      expect((await owner.get(path)).status, path).toBe(404);
    }
    const posts: [string, Record<string, string>][] = [
      [`/ui/pools/${theirs.poolId}/tokens`, { description: "x" }],
      [`/ui/workspaces/${theirs.workspace.id}/runs`, { operation: "apply" }],
      [`/ui/workspaces/${theirs.workspace.id}/lock`, {}],
      [`/ui/workspaces/${theirs.workspace.id}/settings`, { executionMode: "local", poolId: "" }],
      [`/ui/runs/${theirRun.body.id}/cancel`, {}],
      [`/ui/tokens/${other.ownerTokenId}/revoke`, { confirm: "owner" }],
    ];
    for (const [path, form] of posts) {
      const res = await owner.post(path, form);
      expect(res.status, path).toBe(404);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});
