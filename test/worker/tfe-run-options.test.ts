/**
 * What a TFE API run carries to its job, and its actions: `is-destroy`, `refresh-only`,
 * `target-addrs`, `replace-addrs` and `refresh` in the job spec the agent gets; the `-var`
 * values (`variables`) as that run's Terraform variables only; discard, cancel and force-cancel
 * through Outpost's own services; the JSON plan; and bodies it refuses, changing nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { request, requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
import { TestAgent } from "./helpers/runs.ts";
import { type ErrorsDocument, JSONAPI, tfe } from "./helpers/tfe.ts";
import {
  createConfigurationVersion,
  createTfeRun,
  readTfeRun,
  runDocument,
  tfeRunAction,
  tfeWorkspace,
  uploadedVersion,
} from "./helpers/tfe-runs.ts";

const clock = useTestClock();

describe("run options reach the job spec", () => {
  it("passes destroy, refresh-only, targets, replacements and refresh=false to the plan job", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const agent = await TestAgent.register(agentToken);
    const cases = [
      [{ "is-destroy": true }, { operation: "destroy", isDestroy: true }],
      [{ "refresh-only": true }, { operation: "refresh" }],
      [
        {
          "target-addrs": ["null_resource.x", 'module.a.aws_instance.b["k"]'],
          "replace-addrs": ["null_resource.y"],
          refresh: false,
        },
        {
          operation: "apply",
          targetAddrs: ["null_resource.x", 'module.a.aws_instance.b["k"]'],
          replaceAddrs: ["null_resource.y"],
          refresh: false,
        },
      ],
    ] as const;
    for (const [attributes, spec] of cases) {
      const cvId = await uploadedVersion(token, workspace.id, { speculative: true });
      const run = await createTfeRun(token, workspace.id, cvId, {
        ...attributes,
        "plan-only": true,
      });
      expect(run.attributes).toMatchObject({
        "is-destroy": "is-destroy" in attributes,
        "refresh-only": "refresh-only" in attributes,
      });
      const job = await agent.lease();
      expect(job.runId).toBe(run.id);
      expect(job.spec).toMatchObject({ isSpeculative: true, ...spec });
      await agent.start(job);
      await agent.finish(job, { outcome: "succeeded", planSummary: null });
    }
  });
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: an HCL template, not a JavaScript one.
const HCL_TEMPLATE = '"${var.x}-secret"';

describe("-var values", () => {
  it("reach that run's job as sensitive Terraform variables over the workspace's, and no other run", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    await requestJson(`/api/v1/workspaces/${workspace.id}/vars/region`, {
      method: "PUT",
      token: org.tokens.admin,
      body: { value: "us", category: "terraform" },
    });
    const token = org.tokens.member;
    const agent = await TestAgent.register(agentToken);
    const cvId = await uploadedVersion(token, workspace.id, { speculative: true });
    const variables = [
      { key: "region", value: '"eu-west-secret-7"' },
      { key: "sizes", value: '["s", "m"]' },
      { key: "escaped", value: String.raw`"a\tb\n\"q\" \\ \u00e9\U0001F600"` },
      { key: "count", value: "3" },
      { key: "templated", value: HCL_TEMPLATE },
      { key: "directive", value: '"%{if true}x%{endif}"' },
      { key: "joined", value: '"a" + "b"' },
      { key: "tags", value: '{ team = "ops" }' },
    ];
    const withVars = await createTfeRun(token, workspace.id, cvId, {
      "plan-only": true,
      variables,
    });
    // Never shown back, and never stored in the clear.
    expect(withVars.attributes.variables).toEqual([]);
    const stored = await env.DB.prepare("SELECT run_variables FROM runs WHERE id = ?")
      .bind(withVars.id)
      .first<{ run_variables: string }>();
    expect(stored?.run_variables).not.toContain("eu-west-secret");

    const first = await agent.lease();
    const terraformVars = (job: typeof first) =>
      (job.variables ?? []).filter((v) => v.category === "terraform");
    // A plain string literal arrives decoded and not HCL, so the agent masks the bare value;
    // every other expression stays HCL. All are sensitive.
    const hcl = (key: string, value: string) => ({
      key,
      value,
      category: "terraform",
      isHcl: true,
      isSensitive: true,
    });
    expect(terraformVars(first)).toEqual([
      {
        key: "region",
        value: "eu-west-secret-7",
        category: "terraform",
        isHcl: false,
        isSensitive: true,
      },
      hcl("sizes", '["s", "m"]'),
      {
        key: "escaped",
        value: 'a\tb\n"q" \\ \u00e9\u{1F600}',
        category: "terraform",
        isHcl: false,
        isSensitive: true,
      },
      hcl("count", "3"),
      hcl("templated", HCL_TEMPLATE),
      hcl("directive", '"%{if true}x%{endif}"'),
      hcl("joined", '"a" + "b"'),
      hcl("tags", '{ team = "ops" }'),
    ]);
    await agent.start(first);
    await agent.finish(first, { outcome: "succeeded", planSummary: null });
    // Once the run ended, its values are forgotten.
    const forgotten = await env.DB.prepare("SELECT run_variables FROM runs WHERE id = ?")
      .bind(withVars.id)
      .first<{ run_variables: string | null }>();
    expect(forgotten?.run_variables).toBeNull();

    await createTfeRun(token, workspace.id, cvId, { "plan-only": true });
    const second = await agent.lease();
    expect(terraformVars(second)).toEqual([
      expect.objectContaining({ key: "region", value: "us", isHcl: false }),
    ]);
  });
});

describe("discard, cancel and force-cancel", () => {
  it("discards a planned run, and refuses to discard it twice (409)", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const cvId = await uploadedVersion(org.tokens.member, workspace.id);
    const run = await createTfeRun(org.tokens.member, workspace.id, cvId);
    await (await TestAgent.register(agentToken)).plan(true);
    expect((await tfeRunAction(org.tokens.member, run.id, "discard")).status).toBe(202);
    expect((await readTfeRun(org.tokens.reader, run.id)).data.attributes.status).toBe("discarded");
    const again = await tfeRunAction(org.tokens.member, run.id, "discard");
    expect(again.status).toBe(409);
    expect((again.body as ErrorsDocument).errors[0]?.detail).toMatch(/discarded/);
  });

  it("cancels a queued run at once; a running one is asked to stop, then force-canceled after 10 s", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id);
    const queued = await createTfeRun(token, workspace.id, cvId);
    expect((await readTfeRun(token, queued.id)).data.attributes.actions).toMatchObject({
      "is-cancelable": true,
      "is-force-cancelable": false,
    });
    // go-tfe posts its options (`{}` or a comment) with the JSON:API type; an empty body too.
    const posted = await request(`/api/v2/runs/${queued.id}/actions/cancel`, {
      method: "POST",
      token,
      body: "",
      headers: { "content-type": JSONAPI },
    });
    expect(posted.status, await posted.clone().text()).toBe(202);
    expect((await readTfeRun(token, queued.id)).data.attributes.status).toBe("canceled");
    const commented = await tfe<ErrorsDocument>(`/runs/${queued.id}/actions/cancel`, {
      method: "POST",
      token,
      body: { comment: "stop" },
    });
    expect(commented.status).toBe(409);

    const running = await createTfeRun(token, workspace.id, cvId);
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    await agent.start(job);
    expect((await tfeRunAction(token, running.id, "cancel")).status).toBe(202);
    const canceling = await readTfeRun(token, running.id);
    expect(canceling.data.attributes.status).toBe("planning");
    expect(canceling.data.attributes["force-cancel-available-at"]).toEqual(expect.any(String));
    expect((await tfeRunAction(token, running.id, "force-cancel")).status).toBe(409);
    clock.advance(10_000);
    expect((await readTfeRun(token, running.id)).data.attributes.actions).toMatchObject({
      "is-force-cancelable": true,
    });
    expect((await tfeRunAction(token, running.id, "force-cancel")).status).toBe(202);
    expect((await readTfeRun(token, running.id)).data.attributes.status).toBe("force_canceled");
  });
});

describe("the JSON plan", () => {
  it("serves what the plan job stored to callers who may reveal sensitive values", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const cvId = await uploadedVersion(org.tokens.member, workspace.id, { speculative: true });
    const run = await createTfeRun(org.tokens.member, workspace.id, cvId, { "plan-only": true });
    const path = `/api/v2/plans/${run.id.replace("run_", "plan_")}/json-output`;
    expect((await request(path, { token: org.tokens.admin })).status).toBe(404);
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    await agent.start(job);
    const plan = new TextEncoder().encode('{"format_version":"1.2","resource_changes":[]}');
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", plan))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    const put = await request(
      `/agent/v1/jobs/${encodeURIComponent(job.jobId)}/artifacts/plan.json`,
      {
        method: "PUT",
        token: job.runToken ?? "",
        body: plan,
        headers: { "content-type": "application/octet-stream", "outpost-sha256": digest },
      },
    );
    expect(put.status).toBe(200);
    const read = await request(path, { token: org.tokens.admin });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ format_version: "1.2", resource_changes: [] });
    expect((await request(path, { token: org.tokens.member })).status).toBe(403);
  });
});

describe("refused run documents", () => {
  it("answers each invalid body with a 4xx sentence and changes nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const foreign = await tfeWorkspace(other);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id);
    const { user } = await personWithAccess(org, { id: workspace.id }, "plan");
    const pending = await createConfigurationVersion(token, workspace.id);
    const before = await snapshotD1();
    const cases: [unknown, number, RegExp][] = [
      [
        runDocument(workspace.id, cvId, { "is-destroy": true, "refresh-only": true }),
        400,
        /not both/,
      ],
      [runDocument(workspace.id, cvId, { "target-addrs": ["-destroy"] }), 400, /resource address/],
      [runDocument(workspace.id, cvId, { "target-addrs": ["a.b\nc"] }), 400, /resource address/],
      [runDocument(workspace.id, cvId, { "save-plan": true }), 400, /saved cloud plans/],
      [runDocument(workspace.id, cvId, { "refresh-only": true, refresh: false }), 400, /refresh/],
      [
        runDocument(workspace.id, cvId, {
          variables: [
            { key: "a", value: "1" },
            { key: "a", value: "2" },
          ],
        }),
        400,
        /given twice/,
      ],
      [runDocument(workspace.id, cvId, { variables: [{ key: "1bad", value: "1" }] }), 400, /name/],
      [{ data: { type: "runs", attributes: {} } }, 400, /relationships/],
      [runDocument(foreign.workspace.id, null), 404, /not found/],
      [runDocument(workspace.id, pending.id), 409, /is pending: upload its archive/],
      [runDocument(workspace.id, foreign.configurationVersionId), 404, /not found/],
    ];
    for (const [body, status, detail] of cases) {
      const res = await tfe<ErrorsDocument>("/runs", { method: "POST", token, body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(JSON.stringify(res.body.errors)).toMatch(detail);
    }
    for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
      const body = JSON.stringify(runDocument(workspace.id, cvId));
      const res = await request("/api/v2/runs", {
        method: "POST",
        token,
        body,
        headers: { "content-type": type },
      });
      expect(res.status, type).toBeGreaterThanOrEqual(400);
      expect(res.status, type).toBeLessThan(500);
    }
    // Plan access may queue runs but not one that applies unconfirmed.
    const autoApply = await tfe<ErrorsDocument>("/runs", {
      method: "POST",
      token: user.token,
      body: runDocument(workspace.id, cvId, { "auto-apply": true }),
    });
    expect(autoApply.status).toBe(403);
    expect(await snapshotD1()).toEqual(before);
  });
});
