/**
 * Dashboard pages: the CSP and other headers, escaping of every user, agent and log string, live
 * JSON (agent statuses, log tails), and another org's ids answering 404.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { JobAssignment } from "@outpost/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import { poolStub } from "../../src/pools/service.ts";
import { CONTENT_SECURITY_POLICY } from "../../src/ui/routes.tsx";
import { request } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { advancePoolClock, registerAgent, seedPool } from "./helpers/pools.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
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

  it("serves the built script, stylesheet and icon from the static assets, cacheable and revalidated", async () => {
    const types = {
      "app.js": "text/javascript; charset=utf-8",
      "app.css": "text/css; charset=utf-8",
      "favicon.svg": "image/svg+xml",
    };
    for (const [file, type] of Object.entries(types)) {
      const res = await request(`/ui/static/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("cache-control")).toBe("public, max-age=300");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      const body = await res.text();
      // The same bytes as the build wrote into the assets the deployment uploads.
      const asset = await env.ASSETS.fetch(new Request(`https://assets.invalid/ui/static/${file}`));
      expect(body).toBe(await asset.text());
      const etag = res.headers.get("etag");
      expect(etag).toBeTruthy();
      const again = await request(`/ui/static/${file}`, {
        headers: { "if-none-match": etag ?? "" },
      });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
    }
    const css = await (await request("/ui/static/app.css")).text();
    expect(css).toContain(".ansi-fg-1 {");
    expect(css).toContain(".ansi-fg-196{color:#ff0000}");
    const js = await (await request("/ui/static/app.js")).text();
    expect(js).toContain("data-typed-confirm");
    for (const path of ["/ui/static/app.ts", "/ui/static/favicon.ico", "/ui/static/app.js.map"]) {
      const res = await request(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/text\/html/);
    }
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

describe("pool autoscaling", () => {
  it("shows the pool's autoscaling settings and how many agents it wants now", async () => {
    const runnable = await runnableWorkspace(org);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    const html = await (await reader.get(`/ui/pools/${runnable.poolId}`)).text();
    const shown = /<dd data-autoscaling[^>]*>([\s\S]*?)<\/dd>/.exec(html)?.[1] ?? html;
    expect(shown.replace(/\s+/g, " ")).toMatch(
      /0 to 10 agents, 1 job per agent ?<div class="muted">wants 1 agent now \( ?1 queued, 0 running\)<\/div>/,
    );
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
      [
        `/ui/workspaces/${theirs.workspace.id}/configure`,
        { name: "x", executionMode: "local", pool: "", engine: "terraform" },
      ],
      [`/ui/workspaces/${theirs.workspace.id}/delete`, { confirm: theirs.workspace.name }],
      [`/ui/workspaces/${theirs.workspace.name}/lock`, {}],
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
