/** Projects and variable sets in tests, made through the real API by the org's admin token. */
import { expect } from "vitest";
import { requestJson } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";

export type ProjectBody = {
  id: string;
  name: string;
  description: string;
  isDefault: boolean;
  workspaceCount: number;
};

let counter = 0;

/** A new project of the org. */
export async function createProject(org: TestOrg, name?: string): Promise<ProjectBody> {
  const res = await requestJson<ProjectBody>("/api/v1/projects", {
    method: "POST",
    token: org.tokens.admin,
    body: { name: name ?? `project-${counter++}-${Date.now().toString(36)}` },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export type VariableSetBody = {
  id: string;
  name: string;
  global: boolean;
  priority: boolean;
  projects: { id: string; name: string }[];
  workspaces: { id: string; name: string }[];
  variableCount: number;
};

/** A new variable set of the org. */
export async function createVariableSet(
  org: TestOrg,
  body: { name?: string; global?: boolean; priority?: boolean } = {},
): Promise<VariableSetBody> {
  const res = await requestJson<VariableSetBody>("/api/v1/variable-sets", {
    method: "POST",
    token: org.tokens.admin,
    body: { name: `set-${counter++}-${Date.now().toString(36)}`, ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Sets a variable of the set (created or replaced). */
export async function putSetVariable(
  org: TestOrg,
  setId: string,
  key: string,
  body: { value?: string; category: "env" | "terraform"; sensitive?: boolean; hcl?: boolean },
) {
  const res = await requestJson(`/api/v1/variable-sets/${setId}/vars/${key}`, {
    method: "PUT",
    token: org.tokens.admin,
    body,
  });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body;
}

/** Applies the set to a project or a workspace. */
export async function applySet(
  org: TestOrg,
  setId: string,
  target: { projectId: string } | { workspaceId: string },
) {
  const path =
    "projectId" in target ? `projects/${target.projectId}` : `workspaces/${target.workspaceId}`;
  const res = await requestJson(`/api/v1/variable-sets/${setId}/${path}`, {
    method: "PUT",
    token: org.tokens.admin,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}
