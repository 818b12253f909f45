/**
 * The run page names the agent that ran each phase and says what an empty log waits for; the
 * pools list shows agents by status and jobs per pool.
 */
import { describe, expect, it } from "vitest";
import { seedOrg } from "./helpers/fixtures.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";

describe("run page", () => {
  it("says what an empty log waits for, live, then who ran the plan", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const reader = await signIn(org.tokens.reader);
    const queued = await queueRun(org, ws.workspace.id);
    const runId = queued.body.id;

    const waiting = await (await reader.get(`/ui/runs/${runId}`)).text();
    expect(waiting).toMatch(
      /<span class="log-placeholder" id="log-plan-placeholder" data-placeholder="">Waiting: no agent is registered in pool [^<]+<\/span>/,
    );
    expect(waiting).toContain("The apply runs after the plan");

    const agent = await TestAgent.register(ws.agentToken, {
      name: "<b>builder</b>",
      isolation: "bwrap",
    });
    const job = await agent.lease();
    await agent.start(job);
    const live = (await (await reader.get(`/ui/runs/${runId}/live.json`)).json()) as {
      fragments: Record<string, string>;
    };
    expect(live.fragments["log-plan-placeholder"]).toBe(
      "The plan has started; its output appears here as the agent sends it.",
    );
    const page = await (await reader.get(`/ui/runs/${runId}`)).text();
    expect(page).toContain("Plan ran on");
    expect(page).toContain(`&lt;b&gt;builder&lt;/b&gt; (${agent.agentId})`);
    expect(page).toContain(", isolation bwrap");
    expect(page).not.toContain("<b>builder</b>");
  });
});

describe("pools list", () => {
  it("shows agents by status and queued jobs per pool", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    await TestAgent.register(ws.agentToken, { acceptedPhases: ["apply"] });
    await queueRun(org, ws.workspace.id);
    await queueRun(org, ws.workspace.id, { isSpeculative: true, operation: "plan" });
    const reader = await signIn(org.tokens.reader);
    const html = await (await reader.get("/ui/pools")).text();
    expect(html).toMatch(/<span class="badge status-idle">idle<\/span> 1/);
    expect(html).toContain("<td>2 queued</td>");
  });
});
