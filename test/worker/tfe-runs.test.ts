/**
 * Remote execution through the TFE API, as the cloud backend's `terraform plan` and `apply`
 * drive it (`internal/cloud/backend_plan.go`, `backend_apply.go`, go-tfe `run.go`,
 * `configuration_version.go`, `logreader.go`): configuration versions and their upload URLs,
 * plan-only and confirmed runs moving through the real pool object and an agent speaking the
 * real protocol, and each phase's log read from its log-read URL with offsets and STX/ETX.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { grant, personWithAccess } from "./helpers/people.ts";
import { getRun, TestAgent } from "./helpers/runs.ts";
import { type ErrorsDocument, tfe } from "./helpers/tfe.ts";
import {
  appendLog,
  archive,
  createConfigurationVersion,
  createTfeRun,
  foreignPut,
  readLogUrl,
  readTfeRun,
  tfeRunAction,
  tfeWorkspace,
  uploadedVersion,
} from "./helpers/tfe-runs.ts";

const clock = useTestClock();
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("configuration versions", () => {
  it("is pending with an upload URL, stores the archive once, and reads as uploaded", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cv = await createConfigurationVersion(token, workspace.id);
    expect(cv.id).toMatch(/^cv_/);
    expect(cv.attributes).toMatchObject({ status: "pending", "auto-queue-runs": false });
    expect(cv.attributes["upload-url"]).toMatch(/\/api\/v2\/configuration-versions\/cv_.+\/upload/);

    const put = await foreignPut(cv.attributes["upload-url"], await archive());
    expect(put.status).toBe(200);
    const read = await tfe<{ data: { attributes: Record<string, unknown> } }>(
      `/configuration-versions/${cv.id}`,
      { token: org.tokens.reader },
    );
    expect(read.status).toBe(200);
    expect(read.body.data.attributes).toMatchObject({ status: "uploaded", "upload-url": null });
    // The same id is an ordinary Outpost configuration version of the workspace.
    const v1 = await requestJson<{ id: string; source: string; isSpeculative: boolean }>(
      `/api/v1/workspaces/${workspace.id}/configuration-versions/${cv.id}`,
      { token },
    );
    expect(v1.body).toMatchObject({ id: cv.id, source: "upload", isSpeculative: false });

    const again = await foreignPut(cv.attributes["upload-url"], await archive());
    expect(again.status).toBe(409);
    const errors = (await again.json()) as ErrorsDocument;
    expect(errors.errors[0]?.detail).toMatch(/already used/);
  });

  it("refuses an archive without a .tf file: 400, and the version reads errored with why", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const cv = await createConfigurationVersion(org.tokens.member, workspace.id);
    const put = await foreignPut(cv.attributes["upload-url"], await archive({ "README.md": "x" }));
    expect(put.status).toBe(400);
    const body = (await put.json()) as ErrorsDocument;
    expect(body.errors[0]?.detail).toMatch(/no \.tf or \.tf\.json file/);
    const read = await tfe<{ data: { attributes: Record<string, unknown> } }>(
      `/configuration-versions/${cv.id}`,
      { token: org.tokens.member },
    );
    expect(read.body.data.attributes).toMatchObject({ status: "errored" });
    expect(read.body.data.attributes["error-message"]).toMatch(/no \.tf or \.tf\.json file/);
  });

  it("refuses a wrong secret (404), an expired URL (410) and an empty body, changing nothing", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const cv = await createConfigurationVersion(org.tokens.member, workspace.id);
    const url = String(cv.attributes["upload-url"]);
    const before = await snapshotD1();
    const forged = url.replace(/secret=[^&]+/, `secret=${"A".repeat(43)}`);
    expect((await foreignPut(forged, await archive())).status).toBe(404);
    expect((await foreignPut(url, "")).status).toBe(400);
    clock.advance(16 * 60 * 1000);
    const late = await foreignPut(url, await archive());
    expect(late.status).toBe(410);
    expect(await snapshotD1()).toEqual(before);
  });

  it("decides the upload for its creator: one who lost access is refused (403) and the version errors", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const { user, team } = await personWithAccess(org, { id: workspace.id }, "plan");
    const cv = await createConfigurationVersion(user.token, workspace.id);
    await grant(org, { id: workspace.id }, team, "read");
    const put = await foreignPut(cv.attributes["upload-url"], await archive());
    expect(put.status).toBe(403);
    const read = await tfe<{ data: { attributes: Record<string, unknown> } }>(
      `/configuration-versions/${cv.id}`,
      { token: org.tokens.reader },
    );
    expect(read.body.data.attributes).toMatchObject({ status: "errored" });
    expect(read.body.data.attributes["error-message"]).toMatch(/may no longer upload/);
  });

  it("queues a run on upload with auto-queue-runs, as Terraform Cloud does by default", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const cv = await createConfigurationVersion(org.tokens.member, workspace.id, {
      "auto-queue-runs": true,
    });
    expect((await foreignPut(cv.attributes["upload-url"], await archive())).status).toBe(200);
    const runs = await tfe<{ data: { relationships: Record<string, { data: { id: string } }> }[] }>(
      `/workspaces/${workspace.id}/runs`,
      { token: org.tokens.reader },
    );
    expect(runs.body.data).toHaveLength(1);
    expect(runs.body.data[0]?.relationships["configuration-version"]?.data.id).toBe(cv.id);
  });
});

describe("a plan-only run (terraform plan)", () => {
  it("is plan-only on a speculative configuration version without plan-only, as the CLI asks", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id, { speculative: true });
    // internal/cloud/backend_plan.go: speculative configuration, no plan-only attribute.
    const run = await createTfeRun(token, workspace.id, cvId, {
      "auto-apply": false,
      refresh: true,
    });
    expect(run.attributes).toMatchObject({ status: "plan_queued", "plan-only": true });
    const nonSpeculative = await uploadedVersion(token, workspace.id, { speculative: false });
    const normal = await createTfeRun(token, workspace.id, nonSpeculative, { refresh: true });
    expect(normal.attributes["plan-only"]).toBe(false);
  });

  it("plans on the agent, streams its log with offsets and ETX, and finishes", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id, { speculative: true });
    const run = await createTfeRun(token, workspace.id, cvId, { "plan-only": true, refresh: true });
    expect(run.attributes).toMatchObject({ status: "plan_queued", "plan-only": true });
    expect(run.relationships?.plan?.data).toEqual({
      id: run.id.replace("run_", "plan_"),
      type: "plans",
    });

    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    expect(job.spec).toMatchObject({ isSpeculative: true, operation: "apply", refresh: true });
    expect(job.spec.configuration?.id).toBe(cvId);
    await agent.start(job);

    const withPlan = await readTfeRun(token, run.id, "plan,workspace");
    expect(withPlan.data.attributes.status).toBe("planning");
    const plan = withPlan.included?.find((r) => r.type === "plans");
    expect(plan?.attributes.status).toBe("running");
    expect(withPlan.included?.find((r) => r.type === "workspaces")?.id).toBe(workspace.id);
    const logUrl = String(plan?.attributes["log-read-url"]);

    await appendLog(job, 0, "Terraform will perform the following actions:\n");
    const first = await readLogUrl(logUrl, 0);
    expect(first.bytes[0]).toBe(2);
    expect(text(first.bytes.slice(1))).toBe("Terraform will perform the following actions:\n");
    // Nothing more yet, and no ETX while the plan runs.
    const waiting = await readLogUrl(logUrl, first.bytes.length);
    expect(waiting.bytes).toHaveLength(0);

    await appendLog(job, 46, "Plan: 1 to add.\n");
    const summary = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
    await agent.finish(job, { outcome: "succeeded", planSummary: summary });
    const done = await readTfeRun(token, run.id, "plan");
    expect(done.data.attributes.status).toBe("planned_and_finished");
    expect(done.included?.[0]?.attributes).toMatchObject({
      status: "finished",
      "resource-additions": 1,
      "has-changes": true,
    });
    // The rest of the log from the reader's offset, a small limit at a time, then ETX.
    const rest = await readLogUrl(logUrl, first.bytes.length, 8);
    expect(text(rest.bytes)).toBe("Plan: 1 ");
    const tail = await readLogUrl(logUrl, first.bytes.length + 8);
    expect(text(tail.bytes.slice(0, -1))).toBe("to add.\n");
    expect(tail.bytes.at(-1)).toBe(3);
    expect(
      (await readLogUrl(logUrl, first.bytes.length + 8 + tail.bytes.length)).bytes,
    ).toHaveLength(0);
    const apply = await tfe<{ data: { attributes: Record<string, unknown> } }>(
      `/applies/${run.id.replace("run_", "apply_")}`,
      { token },
    );
    expect(apply.body.data.attributes.status).toBe("unreachable");
  });

  it("refuses a forged or altered log-read URL (404)", async () => {
    const org = await seedOrg();
    const { workspace } = await tfeWorkspace(org);
    const cvId = await uploadedVersion(org.tokens.member, workspace.id, { speculative: true });
    const run = await createTfeRun(org.tokens.member, workspace.id, cvId, { "plan-only": true });
    const plan = await tfe<{ data: { attributes: Record<string, unknown> } }>(
      `/plans/${run.id.replace("run_", "plan_")}`,
      { token: org.tokens.reader },
    );
    const url = String(plan.body.data.attributes["log-read-url"]);
    const altered = `${url.slice(0, -4)}${url.slice(-4) === "AAAA" ? "BBBB" : "AAAA"}`;
    expect((await readLogUrl(altered, 0)).status).toBe(404);
    expect(
      (await readLogUrl(`${url.replace(/logs\/.*/, "logs/")}${"x".repeat(40)}`, 0)).status,
    ).toBe(404);
    expect((await readLogUrl(url, 0)).status).toBe(200);
  });
});

describe("a run confirmed through the apply action (terraform apply)", () => {
  it("plans, waits to be confirmed, applies and streams the apply log", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id);
    const run = await createTfeRun(token, workspace.id, cvId, { "auto-apply": false });
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    const planned = await readTfeRun(token, run.id);
    expect(planned.data.attributes.status).toBe("planned");
    expect(planned.data.attributes.actions).toMatchObject({
      "is-confirmable": true,
      "is-discardable": true,
    });
    const workspaceDoc = await tfe<{
      data: {
        attributes: Record<string, unknown>;
        relationships: Record<string, { data: unknown }>;
      };
    }>(`/workspaces/${workspace.id}`, { token });
    expect(workspaceDoc.body.data.relationships["current-run"]?.data).toEqual({
      id: run.id,
      type: "runs",
    });
    // The CLI prints the engine's plan log; it renders no plan of its own.
    expect(workspaceDoc.body.data.attributes["structured-run-output-enabled"]).toBe(false);
    expect(workspaceDoc.body.data.relationships["latest-run"]?.data).toEqual({
      id: run.id,
      type: "runs",
    });

    expect((await tfeRunAction(token, run.id, "apply")).status).toBe(202);
    expect((await readTfeRun(token, run.id)).data.attributes.status).toBe("apply_queued");
    const refused = await tfeRunAction(token, run.id, "apply");
    expect(refused.status).toBe(409);

    const job = await agent.lease();
    await agent.start(job);
    await appendLog(job, 0, "Apply complete! Resources: 1 added.\n");
    await agent.finish(job, { outcome: "succeeded" });
    const applied = await readTfeRun(token, run.id, "apply");
    expect(applied.data.attributes.status).toBe("applied");
    const apply = applied.included?.[0];
    expect(apply?.attributes).toMatchObject({ status: "finished", "resource-additions": 1 });
    const log = await readLogUrl(String(apply?.attributes["log-read-url"]), 0);
    expect(text(log.bytes)).toBe("\u0002Apply complete! Resources: 1 added.\n\u0003");
    expect((await getRun(org, run.id)).source).toBe("cli");
    // An ordinary run: its status changes are the run events notifications are sent from.
    const events = await env.DB.prepare(
      "SELECT status FROM run_events WHERE run_id = ? ORDER BY occurred_at, rowid",
    )
      .bind(run.id)
      .all<{ status: string }>();
    expect(events.results.map((e) => e.status)).toEqual(
      expect.arrayContaining(["planned", "applied"]),
    );
  });

  it("applies without a confirm when the run asks for auto-apply (-auto-approve)", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await tfeWorkspace(org);
    const cvId = await uploadedVersion(org.tokens.member, workspace.id);
    // Unconfirmed applies need write access: a member (write) may, as on /api/v1.
    const run = await createTfeRun(org.tokens.member, workspace.id, cvId, { "auto-apply": true });
    expect(run.attributes["auto-apply"]).toBe(true);
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    await agent.apply();
    expect((await readTfeRun(org.tokens.reader, run.id)).data.attributes.status).toBe("applied");
  });
});
