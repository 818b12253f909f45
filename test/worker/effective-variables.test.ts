/**
 * What a run gets, through the real routes and the real lease: the workspace's own variables
 * merged with a global set, a project set, a priority set and a workspace-scoped set, shown with
 * their sources (sensitive values redacted) by `GET …/effective-variables`, and received exactly
 * so by the agent's job; a fork's job gets no sensitive value, a priority set's included, and no
 * value that one overrode in its place.
 */
import { env } from "cloudflare:workers";
import type { JobVariable } from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { applySet, createProject, createVariableSet, putSetVariable } from "./helpers/projects.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

type Source =
  | { type: "workspace" }
  | { type: "variable_set"; id: string; name: string; scope: string; priority: boolean };
type Effective = {
  key: string;
  category: string;
  value: string | null;
  sensitive: boolean;
  source: Source;
  overriddenBy?: Source;
};
type EffectiveBody = { variables: Effective[]; overridden: Effective[] };

async function putOwn(org: TestOrg, ws: string, key: string, body: Record<string, unknown>) {
  const res = await requestJson(`/api/v1/workspaces/${ws}/vars/${key}`, {
    method: "PUT",
    token: org.tokens.admin,
    body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

/** A runnable workspace in a project, reached by four sets, with variables of its own. */
async function layered(org: TestOrg) {
  const project = await createProject(org, "apps");
  const runnable = await runnableWorkspace(org, { projectId: project.id });
  const ws = runnable.workspace.id;
  const global = await createVariableSet(org, { name: "org-defaults", global: true });
  await putSetVariable(org, global.id, "TF_LOG", { value: "WARN", category: "env" });
  await putSetVariable(org, global.id, "owner", { value: "platform", category: "terraform" });
  await putSetVariable(org, global.id, "region", { value: "global-region", category: "terraform" });
  const onProject = await createVariableSet(org, { name: "apps-cloud" });
  await putSetVariable(org, onProject.id, "AWS_SECRET_ACCESS_KEY", {
    value: "project-secret-9f8e7d",
    category: "env",
    sensitive: true,
  });
  await putSetVariable(org, onProject.id, "region", {
    value: "project-region",
    category: "terraform",
  });
  await applySet(org, onProject.id, { projectId: project.id });
  const priority = await createVariableSet(org, { name: "guardrails", priority: true });
  await putSetVariable(org, priority.id, "instance_type", {
    value: "t3.small",
    category: "terraform",
  });
  await putSetVariable(org, priority.id, "DEPLOY_TOKEN", {
    value: "priority-secret-1a2b3c",
    category: "env",
    sensitive: true,
  });
  await applySet(org, priority.id, { projectId: project.id });
  const byName = await createVariableSet(org, { name: "ws-tuning" });
  await putSetVariable(org, byName.id, "region", {
    value: "workspace-set-region",
    category: "terraform",
  });
  await applySet(org, byName.id, { workspaceId: ws });
  await putOwn(org, ws, "instance_type", { value: "m5.24xlarge", category: "terraform" });
  await putOwn(org, ws, "DEPLOY_TOKEN", { value: "plain-own-value", category: "env" });
  await putOwn(org, ws, "TF_LOG", { value: "DEBUG", category: "env" });
  return { project, runnable, ws, sets: { global, onProject, priority, byName } };
}

describe("effective variables", () => {
  it("shows what a run gets with each source, sensitive values redacted", async () => {
    const org = await seedOrg();
    const { ws, sets } = await layered(org);
    const res = await requestJson<EffectiveBody>(`/api/v1/workspaces/${ws}/effective-variables`, {
      token: org.tokens.reader,
    });
    expect(res.status).toBe(200);
    const set = (s: { id: string; name: string }, scope: string, priority = false) => ({
      type: "variable_set",
      id: s.id,
      name: s.name,
      scope,
      priority,
    });
    const own = { type: "workspace" };
    const summary = (list: Effective[]) =>
      list.map((v) => ({
        key: `${v.category}:${v.key}`,
        value: v.value,
        source: v.source,
        ...(v.overriddenBy ? { overriddenBy: v.overriddenBy } : {}),
      }));
    expect(summary(res.body.variables)).toEqual([
      { key: "env:AWS_SECRET_ACCESS_KEY", value: null, source: set(sets.onProject, "project") },
      { key: "env:DEPLOY_TOKEN", value: null, source: set(sets.priority, "project", true) },
      { key: "env:TF_LOG", value: "DEBUG", source: own },
      {
        key: "terraform:instance_type",
        value: "t3.small",
        source: set(sets.priority, "project", true),
      },
      { key: "terraform:owner", value: "platform", source: set(sets.global, "global") },
      {
        key: "terraform:region",
        value: "workspace-set-region",
        source: set(sets.byName, "workspace"),
      },
    ]);
    // Losers by key, each key's in precedence order.
    expect(summary(res.body.overridden)).toEqual([
      {
        key: "env:DEPLOY_TOKEN",
        value: "plain-own-value",
        source: own,
        overriddenBy: set(sets.priority, "project", true),
      },
      { key: "env:TF_LOG", value: "WARN", source: set(sets.global, "global"), overriddenBy: own },
      {
        key: "terraform:instance_type",
        value: "m5.24xlarge",
        source: own,
        overriddenBy: set(sets.priority, "project", true),
      },
      {
        key: "terraform:region",
        value: "project-region",
        source: set(sets.onProject, "project"),
        overriddenBy: set(sets.byName, "workspace"),
      },
      {
        key: "terraform:region",
        value: "global-region",
        source: set(sets.global, "global"),
        overriddenBy: set(sets.byName, "workspace"),
      },
    ]);
    expect(JSON.stringify(res.body)).not.toMatch(/secret-/);
  });

  it("the job's agent receives exactly the merged variables", async () => {
    const org = await seedOrg();
    const { runnable, ws } = await layered(org);
    const queued = await queueRun(org, ws);
    expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    const agent = await TestAgent.register(runnable.agentToken);
    const job = await agent.lease();
    const got = (job.variables ?? []).map((v: JobVariable) => [
      `${v.category}:${v.key}`,
      v.value,
      v.isSensitive,
    ]);
    expect(got).toEqual([
      ["env:AWS_SECRET_ACCESS_KEY", "project-secret-9f8e7d", true],
      ["env:DEPLOY_TOKEN", "priority-secret-1a2b3c", true],
      ["env:TF_LOG", "DEBUG", false],
      ["terraform:instance_type", "t3.small", false],
      ["terraform:owner", "platform", false],
      ["terraform:region", "workspace-set-region", false],
    ]);
    expect(job.withheldVariables).toBeUndefined();
  });

  it("a fork's job gets no sensitive value, a priority set's included, and nothing in its place", async () => {
    const org = await seedOrg();
    const { runnable, ws } = await layered(org);
    // A pull request from a fork: its configuration version is a fork's (as a webhook makes it).
    await env.DB.prepare(
      "UPDATE configuration_versions SET is_fork = 1, is_speculative = 1 WHERE id = ?",
    )
      .bind(runnable.configurationVersionId)
      .run();
    const queued = await queueRun(org, ws, {
      operation: "plan",
      configurationVersionId: runnable.configurationVersionId,
    });
    expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    const agent = await TestAgent.register(runnable.agentToken);
    const job = await agent.lease();
    expect(job.spec.isFork).toBe(true);
    const got = (job.variables ?? []).map((v: JobVariable) => `${v.category}:${v.key}=${v.value}`);
    expect(got).toEqual([
      "env:TF_LOG=DEBUG",
      "terraform:instance_type=t3.small",
      "terraform:owner=platform",
      "terraform:region=workspace-set-region",
    ]);
    // DEPLOY_TOKEN is the priority set's sensitive value: withheld, and the workspace's own
    // plain value that it overrides is not sent instead.
    expect(JSON.stringify(job)).not.toContain("plain-own-value");
    expect(JSON.stringify(job)).not.toMatch(/secret-/);
    expect(job.withheldVariables).toEqual([
      { key: "AWS_SECRET_ACCESS_KEY", category: "env" },
      { key: "DEPLOY_TOKEN", category: "env" },
    ]);
  });
});

describeAuth("GET /api/v1/workspaces/:workspaceId/effective-variables", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).id}/effective-variables`,
  }),
});

describeAccess("GET /api/v1/workspaces/:workspaceId/effective-variables", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const ws = await createWorkspace(org);
    return {
      workspaceId: ws.id,
      method: "GET",
      path: `/api/v1/workspaces/${ws.id}/effective-variables`,
    };
  },
});

it("answers 404 for an unknown workspace", async () => {
  const org = await seedOrg();
  const res = await requestJson<ErrorBody>("/api/v1/workspaces/nope/effective-variables", {
    token: org.tokens.reader,
  });
  expect(res.status).toBe(404);
});
