/**
 * Every TFE API route of remote runs through the auth matrix (missing, malformed, unknown and
 * revoked tokens, each role below the route's, another organization's ids: 404) and the team
 * access matrix, with the roles of `/api/v1`: reading needs read, queueing and uploading plan,
 * the run actions write, and the JSON plan (every variable value in it) what revealing
 * sensitive values needs.
 */
import type { AccessLevel } from "../../src/authz/model.ts";
import type { Role } from "../../src/tokens/model.ts";
import { request } from "./helpers/api.ts";
import { type AuthTarget, describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import type { TestOrg } from "./helpers/fixtures.ts";
import { TestAgent } from "./helpers/runs.ts";
import { JSONAPI } from "./helpers/tfe.ts";
import {
  createConfigurationVersion,
  createTfeRun,
  runDocument,
  tfeWorkspace,
  uploadedVersion,
} from "./helpers/tfe-runs.ts";

const json = { "content-type": JSONAPI };

/** A workspace with an uploaded configuration and a run on it, planned when asked. */
async function runIn(org: TestOrg, options: { planned?: boolean; jsonPlan?: boolean } = {}) {
  const { workspace, agentToken } = await tfeWorkspace(org);
  const cvId = await uploadedVersion(org.tokens.member, workspace.id);
  const run = await createTfeRun(org.tokens.member, workspace.id, cvId);
  if (options.planned || options.jsonPlan) {
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    await agent.start(job);
    if (options.jsonPlan) {
      const body = new TextEncoder().encode("{}");
      const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", body))]
        .map((b) => b.toString(16).padStart(2, "0"))
        .join("");
      await request(`/agent/v1/jobs/${encodeURIComponent(job.jobId)}/artifacts/plan.json`, {
        method: "PUT",
        token: job.runToken ?? "",
        body,
        headers: { "content-type": "application/octet-stream", "outpost-sha256": digest },
      });
    }
    const summary = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
    await agent.finish(job, { outcome: "succeeded", planSummary: summary });
  }
  return { workspaceId: workspace.id, cvId, runId: run.id };
}

type Case = {
  name: string;
  role: Role;
  level: AccessLevel;
  allowedStatus: number;
  target: (org: TestOrg) => Promise<AuthTarget & { workspaceId: string }>;
};

const cases: Case[] = [
  {
    name: "POST /api/v2/workspaces/{id}/configuration-versions",
    role: "member",
    level: "plan",
    allowedStatus: 201,
    target: async (org) => {
      const { workspace } = await tfeWorkspace(org);
      return {
        method: "POST",
        path: `/api/v2/workspaces/${workspace.id}/configuration-versions`,
        body: { data: { type: "configuration-versions", attributes: { speculative: true } } },
        headers: json,
        workspaceId: workspace.id,
      };
    },
  },
  {
    name: "GET /api/v2/configuration-versions/{id}",
    role: "reader",
    level: "read",
    allowedStatus: 200,
    target: async (org) => {
      const { workspace } = await tfeWorkspace(org);
      const cv = await createConfigurationVersion(org.tokens.member, workspace.id);
      const path = `/api/v2/configuration-versions/${cv.id}`;
      return { method: "GET", path, workspaceId: workspace.id };
    },
  },
  {
    name: "POST /api/v2/runs",
    role: "member",
    level: "plan",
    allowedStatus: 201,
    target: async (org) => {
      const { workspace } = await tfeWorkspace(org);
      const cvId = await uploadedVersion(org.tokens.member, workspace.id);
      const body = runDocument(workspace.id, cvId, { message: "matrix" });
      return {
        method: "POST",
        path: "/api/v2/runs",
        body,
        headers: json,
        workspaceId: workspace.id,
      };
    },
  },
  ...(["", "/run-events"] as const).map(
    (suffix): Case => ({
      name: `GET /api/v2/runs/{id}${suffix}`,
      role: "reader",
      level: "read",
      allowedStatus: 200,
      target: async (org) => {
        const { workspaceId, runId } = await runIn(org);
        return { method: "GET", path: `/api/v2/runs/${runId}${suffix}`, workspaceId };
      },
    }),
  ),
  {
    name: "GET /api/v2/workspaces/{id}/runs",
    role: "reader",
    level: "read",
    allowedStatus: 200,
    target: async (org) => {
      const { workspaceId } = await runIn(org);
      return { method: "GET", path: `/api/v2/workspaces/${workspaceId}/runs`, workspaceId };
    },
  },
  ...(["plans", "applies"] as const).map(
    (kind): Case => ({
      name: `GET /api/v2/${kind}/{id}`,
      role: "reader",
      level: "read",
      allowedStatus: 200,
      target: async (org) => {
        const { workspaceId, runId } = await runIn(org);
        const id = runId.replace("run_", kind === "plans" ? "plan_" : "apply_");
        return { method: "GET", path: `/api/v2/${kind}/${id}`, workspaceId };
      },
    }),
  ),
  {
    name: "GET /api/v2/plans/{id}/json-output",
    role: "admin",
    level: "write",
    allowedStatus: 200,
    target: async (org) => {
      const { workspaceId, runId } = await runIn(org, { jsonPlan: true });
      const path = `/api/v2/plans/${runId.replace("run_", "plan_")}/json-output`;
      return { method: "GET", path, workspaceId };
    },
  },
  ...(["apply", "discard", "cancel", "force-cancel"] as const).map(
    (action): Case => ({
      name: `POST /api/v2/runs/{id}/actions/${action}`,
      role: "member",
      level: "write",
      allowedStatus: 202,
      target: async (org) => {
        const planned = action === "apply" || action === "discard";
        const { workspaceId, runId } = await runIn(org, { planned });
        const path = `/api/v2/runs/${runId}/actions/${action}`;
        return { method: "POST", path, workspaceId };
      },
    }),
  ),
];

for (const { name, role, level, allowedStatus, target } of cases) {
  describeAuth(name, { target, role });
  describeAccess(name, { target, level, allowedStatus });
}
