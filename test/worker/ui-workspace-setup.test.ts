/**
 * The dashboard does the whole job: creating, configuring and deleting workspaces, uploading a
 * configuration through a file input, queueing runs that say which configuration they use, and
 * every workspace page by name. Each form: CSRF, roles, bad input changing nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, requestJson, workerFetch } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { seedPool } from "./helpers/pools.ts";
import { runnableWorkspace } from "./helpers/runs.ts";
import { tarGz } from "./helpers/tarball.ts";
import { signIn, type UiSession } from "./helpers/ui.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

let org: TestOrg;
let owner: UiSession;
let admin: UiSession;
let member: UiSession;
let reader: UiSession;
let counter = 0;

beforeAll(async () => {
  org = await seedOrg();
  [owner, admin, member, reader] = await Promise.all([
    signIn(org.ownerToken),
    signIn(org.tokens.admin),
    signIn(org.tokens.member),
    signIn(org.tokens.reader),
  ]);
});

const uniqueName = () => `ui-ws-${Date.now().toString(36)}-${counter++}`;

type WorkspaceBody = Record<string, unknown> & { id: string; name: string };

const readWorkspace = (ref: string) =>
  requestJson<WorkspaceBody>(`/api/v1/workspaces/${ref}`, { token: org.ownerToken });

/** Submits the upload form as a browser does: multipart with the file and the CSRF token. */
function upload(session: UiSession, ref: string, file: Uint8Array | null, csrf?: string) {
  const form = new FormData();
  if (csrf !== "") {
    form.set("_csrf", csrf ?? session.csrf);
  }
  if (file) {
    form.set("configuration", new File([file], "config.tar.gz", { type: "application/gzip" }));
  }
  return workerFetch(
    new Request(`${BASE}/ui/workspaces/${ref}/configurations`, {
      method: "POST",
      headers: { cookie: session.cookie },
      body: form,
      redirect: "manual",
    }),
  );
}

describe("creating a workspace", () => {
  it("creates one with every setting and opens its page by name", async () => {
    const pool = await seedPool(org);
    const name = uniqueName();
    const list = await (await admin.get("/ui/workspaces")).text();
    expect(list).toContain('action="/ui/workspaces"');
    const res = await admin.post("/ui/workspaces", {
      name,
      description: "made in the dashboard",
      project: "",
      executionMode: "agent",
      pool: pool.poolId,
      engine: "tofu",
      engineVersion: "~> 1.8",
      autoApply: "on",
      workingDirectory: "infra/prod",
      vcsRepoUrl: "https://git.example.com/team/infra.git",
      vcsBranch: "main",
      vcsTriggerPaths: "infra/, modules/",
      stackName: "",
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/ui/workspaces/${name}?done=created`);
    const page = await admin.get(`/ui/workspaces/${name}?done=created`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Workspace created.");
    const ws = await readWorkspace(name);
    expect(ws.body).toMatchObject({
      name,
      executionMode: "agent",
      poolId: pool.poolId,
      engine: "tofu",
      engineVersion: "~> 1.8",
      autoApply: true,
      workingDirectory: "infra/prod",
      vcsRepoUrl: "https://git.example.com/team/infra.git",
      vcsBranch: "main",
      vcsTriggerPaths: ["infra/", "modules/"],
    });
  });

  it("creates a Pulumi workspace with its stack, naming the pool by name", async () => {
    const name = uniqueName();
    const pools = await requestJson<{ pools: { id: string; name: string }[] }>("/api/v1/pools", {
      token: org.ownerToken,
    });
    const pool = pools.body.pools[0];
    expect(pool).toBeDefined();
    const res = await admin.post("/ui/workspaces", {
      name,
      executionMode: "agent",
      pool: pool?.name ?? "",
      engine: "pulumi",
      engineVersion: "^3.150",
      stackName: "dev",
    });
    expect(res.status).toBe(303);
    expect((await readWorkspace(name)).body).toMatchObject({
      engine: "pulumi",
      stackName: "dev",
      poolId: pool?.id,
    });
  });

  it("refuses members, readers, a missing CSRF token and bad settings, changing nothing", async () => {
    const before = await snapshotD1();
    const form = { name: uniqueName(), executionMode: "local", engine: "terraform" };
    expect(await (await member.get("/ui/workspaces")).text()).not.toContain(
      'action="/ui/workspaces"',
    );
    expect((await member.post("/ui/workspaces", form)).status).toBe(403);
    expect((await reader.post("/ui/workspaces", form)).status).toBe(403);
    expect((await admin.post("/ui/workspaces", form, null)).status).toBe(403);
    const bad = [
      { ...form, name: "ws_reserved" },
      { ...form, engineVersion: "not a version!" },
      { ...form, workingDirectory: "../escape" },
      { ...form, engine: "ansible" },
      { ...form, engine: "pulumi" },
      { ...form, executionMode: "agent", pool: "no-such-pool" },
      { ...form, vcsRepoUrl: "file:///etc" },
      { ...form, extra: "field" },
    ];
    for (const fields of bad) {
      const res = await admin.post("/ui/workspaces", fields);
      expect([400, 404], JSON.stringify(fields)).toContain(res.status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("configuring and deleting a workspace", () => {
  it("changes the settings from the page reached by name", async () => {
    const ws = await createWorkspace(org, { name: uniqueName() });
    const html = await (await admin.get(`/ui/workspaces/${ws.name}`)).text();
    expect(html).toContain(`action="/ui/workspaces/${ws.id}/configure"`);
    const res = await admin.post(`/ui/workspaces/${ws.name}/configure`, {
      name: `${ws.name}-renamed`,
      executionMode: "local",
      pool: "",
      engine: "terraform",
      engineVersion: "1.9.5",
      autoApply: "on",
      workingDirectory: "stacks/app",
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/ui/workspaces/${ws.name}-renamed?done=saved`);
    expect((await readWorkspace(ws.id)).body).toMatchObject({
      name: `${ws.name}-renamed`,
      engineVersion: "1.9.5",
      autoApply: true,
      workingDirectory: "stacks/app",
    });
  });

  it("refuses members, a missing CSRF token and bad settings, changing nothing", async () => {
    const ws = await createWorkspace(org, { name: uniqueName() });
    const path = `/ui/workspaces/${ws.id}/configure`;
    const form = { name: ws.name, executionMode: "local", engine: "terraform" };
    const before = await snapshotD1();
    expect((await member.post(path, form)).status).toBe(403);
    expect((await admin.post(path, form, null)).status).toBe(403);
    expect((await admin.post(path, { ...form, engineVersion: "~> nope" })).status).toBe(400);
    expect((await admin.post(path, { ...form, name: "has space" })).status).toBe(400);
    expect((await admin.post("/ui/workspaces/no-such-workspace/configure", form)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });

  it("deletes only once the name is typed, and only for admins", async () => {
    const ws = await createWorkspace(org, { name: uniqueName() });
    const path = `/ui/workspaces/${ws.name}`;
    const before = await snapshotD1();
    expect((await member.post(`${path}/delete`, { confirm: ws.name })).status).toBe(403);
    expect((await admin.post(`${path}/delete`, { confirm: "wrong" })).status).toBe(400);
    expect((await admin.post(`${path}/delete`, { confirm: ws.name }, null)).status).toBe(403);
    expect(await snapshotD1()).toEqual(before);
    const res = await admin.post(`${path}/delete`, { confirm: ws.name });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/ui/workspaces?done=deleted");
    expect((await readWorkspace(ws.id)).status).toBe(404);
    expect((await admin.get(path)).status).toBe(404);
  });
});

describe("uploading a configuration and queueing runs", () => {
  it("uploads a .tar.gz and the queue form names the configuration a run uses", async () => {
    const { workspace, configurationVersionId: first } = await runnableWorkspace(org);
    const body = await tarGz([{ name: "main.tf", body: 'output "x" { value = 1 }\n' }]);
    const uploaded = await upload(member, workspace.name, body);
    expect(uploaded.status).toBe(303);
    const versions = await requestJson<{ configurationVersions: { id: string }[] }>(
      `/api/v1/workspaces/${workspace.id}/configuration-versions`,
      { token: org.ownerToken },
    );
    const [latest] = versions.body.configurationVersions;
    expect(latest?.id).not.toBe(first);
    const html = await (await member.get(`/ui/workspaces/${workspace.name}`)).text();
    expect(html).toContain(`Uses the newest configuration, ${latest?.id}`);
    const queued = await member.post(`/ui/workspaces/${workspace.name}/runs`, {
      operation: "plan",
      configurationVersionId: first,
    });
    expect(queued.status).toBe(303);
    const runId = (queued.headers.get("location") ?? "").split("/").pop() ?? "";
    const run = await requestJson<{ configurationVersionId: string }>(`/api/v1/runs/${runId}`, {
      token: org.ownerToken,
    });
    expect(run.body.configurationVersionId).toBe(first);
  });

  it("refuses readers, a missing CSRF token, no file and a tar without configuration", async () => {
    const { workspace } = await runnableWorkspace(org);
    const good = await tarGz([{ name: "main.tf", body: "" }]);
    const before = await snapshotD1();
    expect((await upload(reader, workspace.id, good)).status).toBe(403);
    expect((await upload(member, workspace.id, good, "")).status).toBe(403);
    expect((await upload(member, workspace.id, null)).status).toBe(400);
    const readmeOnly = await tarGz([{ name: "README.md", body: "hello" }]);
    const refused = await upload(member, workspace.id, readmeOnly);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(".tf");
    const notGzip = new TextEncoder().encode("not a tarball");
    expect((await upload(member, workspace.id, notGzip)).status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("local-mode workspaces", () => {
  it("show the backend block to copy, with the workspace's address", async () => {
    const ws = await createWorkspace(org, { name: uniqueName(), executionMode: "local" });
    const html = await (await owner.get(`/ui/workspaces/${ws.name}`)).text();
    expect(html).toContain("backend &quot;http&quot;");
    expect(html).toContain(`/state/v1/${ws.id}&quot;`);
  });
});
