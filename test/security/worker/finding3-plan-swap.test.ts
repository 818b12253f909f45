/**
 * Finding 3: a plan job's token outlived its plan: after a member confirmed, it replaced
 * `plan.tfplan` and the apply job downloaded the swapped file; it could still write state during
 * the apply. Now artefacts are written once per job under a live lease, the plan's SHA-256 is
 * recorded when the plan job finishes and shown on the run, and the apply job gets it.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { artifactKey } from "../../../src/runs/blobs.ts";
import { request } from "../../worker/helpers/api.ts";
import { snapshotD1 } from "../../worker/helpers/d1-snapshot.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { getRun, runAction } from "../../worker/helpers/runs.ts";
import { BackendClient, stateJson } from "../../worker/helpers/state-fixtures.ts";
import { signIn } from "../../worker/helpers/ui.ts";
import {
  encode,
  finishPlan,
  jobUrl,
  putArtifact,
  runnableWithAgent,
  sha256Hex,
  startedPlan,
} from "./helpers.ts";

describe("finding 3: the plan that is confirmed is the plan that is applied", () => {
  it("the plan job's token cannot swap the plan after the plan, nor write state during the apply", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { run, job } = await startedPlan(org, target, { operation: "apply" });
    const plan = await finishPlan(target.agent, job, encode("the reviewed plan"));
    const planned = await getRun(org, run.id);
    expect(planned.planSha256).toBe(await sha256Hex(plan));
    const page = await (await signIn(org.tokens.reader)).get(`/ui/runs/${run.id}`);
    expect(await page.text()).toContain(await sha256Hex(plan));
    expect((await runAction(org, run.id, "confirm")).status).toBe(200);

    const swap = await putArtifact(job, "plan.tfplan", encode("rm -rf prod"));
    expect(swap.status).toBe(401);
    expect(swap.body.error.code).toBe("TOKEN_REVOKED");

    const apply = await target.agent.lease();
    expect(apply.spec.planSha256).toBe(await sha256Hex(plan));
    await target.agent.start(apply);
    const got = await request(jobUrl(apply, "/artifacts/plan.tfplan"), {
      token: apply.runToken ?? "",
    });
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(plan);
    const during = new BackendClient(target.workspace.id, job.runToken ?? "");
    expect((await during.put(stateJson({ serial: 1, lineage: "x" }))).status).toBe(401);
  });

  it("artefacts are written once per job: same bytes again is fine, other bytes are refused", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { job } = await startedPlan(org, target, { operation: "apply" });
    const plan = encode("plan A");
    expect((await putArtifact(job, "plan.tfplan", plan)).status).toBe(200);
    // An agent retrying an upload whose answer was lost.
    expect((await putArtifact(job, "plan.tfplan", plan)).status).toBe(200);
    const before = await snapshotD1();
    const other = await putArtifact(job, "plan.tfplan", encode("plan B"));
    expect(other.status).toBe(409);
    expect(other.body.error.message).toContain("written once");
    const lying = await putArtifact(job, "plan.json", encode("{}"), undefined, "0".repeat(64));
    expect(lying.status).toBe(400);
    const ref = { orgId: org.orgId, workspaceId: target.workspace.id, runId: job.runId };
    expect(await env.BLOBS.head(artifactKey(ref, "plan.json"))).toBeNull();
    expect(await snapshotD1()).toEqual(before);
  });

  it("the apply job cannot upload plan artefacts; an unstarted lease cannot either", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { run, job } = await startedPlan(org, target, { operation: "apply" });
    await finishPlan(target.agent, job);
    await runAction(org, run.id, "confirm");
    const apply = await target.agent.lease();
    expect((await putArtifact(apply, "plan.tfplan", encode("x"))).status).toBe(401);
    await target.agent.start(apply);
    const refused = await putArtifact(apply, "plan.tfplan", encode("x"));
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain("only the plan job");
  });
});
