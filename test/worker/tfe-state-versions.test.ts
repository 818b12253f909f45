/**
 * The TFE API's state versions through the real Worker, with the requests of the cloud
 * backend's local mode (`internal/cloud/state.go`) and go-tfe's `StateVersions` (`Upload`:
 * create, PUT to `hosted-state-upload-url` without a token, read again; `Create` with the state
 * inline; `ReadCurrent`, `Download`). The same history and locks as the `http` backend.
 */
import { describe, expect, it } from "vitest";
import { BASE, workerFetch } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { BackendClient, seedWorkspace, stateJson } from "./helpers/state-fixtures.ts";
import { type Document, type ErrorsDocument, JSONAPI, tfe } from "./helpers/tfe.ts";

const clock = useTestClock();

async function md5Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("MD5", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** go-tfe's create document: serial, lineage, md5, and the state inline when given. */
async function createDocument(state: string, options: { inline?: boolean; md5?: string } = {}) {
  const parsed = JSON.parse(state) as { serial: number; lineage: string };
  return {
    data: {
      type: "state-versions",
      attributes: {
        serial: parsed.serial,
        lineage: parsed.lineage,
        md5: options.md5 ?? (await md5Hex(state)),
        force: false,
        "json-state-outputs": btoa("{}"),
        ...(options.inline ? { state: btoa(state) } : {}),
      },
    },
  };
}

/** `doForeignPUTRequest`: no Authorization header, an octet stream. */
function foreignPut(url: unknown, body: string): Promise<Response> {
  if (typeof url !== "string") {
    throw new Error(`no upload URL: ${String(url)}`);
  }
  return workerFetch(
    new Request(url, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream", accept: "application/json, */*" },
      body,
    }),
  );
}

/** go-tfe's `Upload`: create without the body, PUT both bodies, read the version again. */
async function upload(org: TestOrg, token: string, ws: string, state: string) {
  const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
    method: "POST",
    token,
    body: await createDocument(state),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const { attributes } = created.body.data;
  const json = await foreignPut(attributes["hosted-json-state-upload-url"], "{}");
  const raw = await foreignPut(attributes["hosted-state-upload-url"], state);
  return { created, json, raw, org };
}

describe("state versions: the cloud backend's local mode", () => {
  it("uploads through the upload URL, reads the version, the current one, and downloads it", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const token = org.tokens.member;
    const none = await tfe<ErrorsDocument>(`/workspaces/${ws}/current-state-version`, { token });
    expect(none.status).toBe(404);
    expect(none.body.errors[0]?.detail).toContain("no state version");

    const lock = await tfe<Document>(`/workspaces/${ws}/actions/lock`, {
      method: "POST",
      token,
      body: { reason: "terraform apply" },
    });
    expect(lock.status).toBe(200);
    const state = stateJson({ serial: 1, lineage: "lin-1" });
    const { created, json, raw } = await upload(org, token, ws, state);
    expect(created.body.data).toMatchObject({
      type: "state-versions",
      attributes: { status: "pending", serial: 1, "hosted-state-download-url": null },
    });
    const id = created.body.data.id;
    expect(json.status).toBe(200);
    expect(raw.status, await raw.clone().text()).toBe(200);

    const read = await tfe<Document>(`/state-versions/${id}`, { token: org.tokens.reader });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({
      id,
      attributes: { status: "finalized", serial: 1, size: state.length },
    });
    const current = await tfe<Document>(`/workspaces/${ws}/current-state-version`, { token });
    expect(current.body.data.id).toBe(id);
    // The read answers no upload URL: only the creating answer carries the secret.
    expect(current.body.data.attributes["hosted-state-upload-url"]).toBeUndefined();

    const url = current.body.data.attributes["hosted-state-download-url"];
    expect(url).toBe(`${BASE}/api/v2/state-versions/${id}/download`);
    const download = await workerFetch(
      new Request(String(url), {
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
      }),
    );
    expect(download.status).toBe(200);
    expect(await download.text()).toBe(state);

    // The same history the http backend serves.
    const backend = await new BackendClient(ws, token).get();
    expect(await backend.text()).toBe(state);
    const unlock = await tfe<Document>(`/workspaces/${ws}/actions/unlock`, {
      method: "POST",
      token,
    });
    expect(unlock.status).toBe(200);
  });

  it("stores a state sent inline as older clients do, under the same serial and lineage rules", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const token = org.tokens.member;
    const first = stateJson({ serial: 3, lineage: "lin-a" });
    const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
      method: "POST",
      token,
      body: await createDocument(first, { inline: true }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data.attributes).toMatchObject({ status: "finalized", serial: 3 });

    const before = await snapshotD1();
    const refused = [
      stateJson({ serial: 3, lineage: "lin-a", outputs: { x: { value: 1, type: "number" } } }),
      stateJson({ serial: 2, lineage: "lin-a" }),
      stateJson({ serial: 4, lineage: "lin-b" }),
    ];
    for (const state of refused) {
      const res = await tfe<ErrorsDocument>(`/workspaces/${ws}/state-versions`, {
        method: "POST",
        token,
        body: await createDocument(state, { inline: true }),
      });
      expect(res.status, state).toBe(409);
      expect(res.headers.get("content-type")).toBe(JSONAPI);
      expect(res.body.errors[0]?.code).toBe("CONFLICT");
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses an upload whose body does not match the declared md5, and keeps nothing", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const state = stateJson({ serial: 1, lineage: "lin" });
    const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
      method: "POST",
      token: org.tokens.member,
      body: await createDocument(state, { md5: "0".repeat(32) }),
    });
    expect(created.status).toBe(201);
    const before = await snapshotD1();
    const res = await foreignPut(created.body.data.attributes["hosted-state-upload-url"], state);
    expect(res.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses an upload URL with another secret, and one that has expired", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const state = stateJson({ serial: 1, lineage: "lin" });
    const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
      method: "POST",
      token: org.tokens.member,
      body: await createDocument(state),
    });
    const url = String(created.body.data.attributes["hosted-state-upload-url"]);
    const forged = url.replace(/secret=[^&]+/, `secret=${"A".repeat(43)}`);
    const before = await snapshotD1();
    const wrong = await foreignPut(forged, state);
    expect(wrong.status).toBe(404);
    expect(((await wrong.json()) as ErrorsDocument).errors[0]?.code).toBe("NOT_FOUND");
    clock.advance(16 * 60 * 1000);
    const late = await foreignPut(url, state);
    expect(late.status).toBe(410);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses the upload while someone else holds the workspace lock", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const locked = await tfe<Document>(`/workspaces/${ws}/actions/lock`, {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(locked.status).toBe(200);
    const state = stateJson({ serial: 1, lineage: "lin" });
    const before = await snapshotD1();
    const inline = await tfe<ErrorsDocument>(`/workspaces/${ws}/state-versions`, {
      method: "POST",
      token: org.tokens.member,
      body: await createDocument(state, { inline: true }),
    });
    expect(inline.status).toBe(409);
    const { raw } = await upload(org, org.tokens.member, ws, state);
    expect(raw.status).toBe(409);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses a workspace that runs on agents, invalid documents and force-push, changing nothing", async () => {
    const org = await seedOrg();
    const agentWs = await seedWorkspace(org, { executionMode: "agent" });
    const ws = await seedWorkspace(org);
    const state = stateJson({ serial: 1, lineage: "lin" });
    const before = await snapshotD1();
    const onAgents = await tfe<ErrorsDocument>(`/workspaces/${agentWs}/state-versions`, {
      method: "POST",
      token: org.tokens.member,
      body: await createDocument(state),
    });
    expect(onAgents.status).toBe(403);
    expect(onAgents.body.errors[0]?.detail).toContain('"local"');
    const good = await createDocument(state);
    const cases: { attributes: Record<string, unknown>; field: string }[] = [
      { attributes: { ...good.data.attributes, md5: "xyz" }, field: "md5" },
      { attributes: { ...good.data.attributes, serial: -1 }, field: "serial" },
      { attributes: { ...good.data.attributes, state: "not base64!" }, field: "state" },
      { attributes: { ...good.data.attributes, force: true }, field: "force" },
    ];
    for (const { attributes, field } of cases) {
      const res = await tfe<ErrorsDocument>(`/workspaces/${ws}/state-versions`, {
        method: "POST",
        token: org.tokens.member,
        body: { data: { type: "state-versions", attributes } },
      });
      expect(res.status, field).toBe(400);
      expect(res.body.errors[0]?.detail).toContain(field);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("answers 404 for another organization's state version", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const ws = await seedWorkspace(org);
    const state = stateJson({ serial: 1, lineage: "lin" });
    const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
      method: "POST",
      token: org.tokens.member,
      body: await createDocument(state, { inline: true }),
    });
    for (const path of [
      `/state-versions/${created.body.data.id}`,
      `/state-versions/${created.body.data.id}/download`,
    ]) {
      const res = await tfe<ErrorsDocument>(path, { token: other.ownerToken });
      expect(res.status).toBe(404);
    }
  });
});

async function storedVersion(org: TestOrg, ws: string): Promise<string> {
  const state = stateJson({ serial: 1, lineage: "lin" });
  const created = await tfe<Document>(`/workspaces/${ws}/state-versions`, {
    method: "POST",
    token: org.ownerToken,
    body: await createDocument(state, { inline: true }),
  });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

const json = { "content-type": JSONAPI };

describeAuth("GET /api/v2/workspaces/{id}/current-state-version", {
  target: async (org) => {
    const ws = await seedWorkspace(org);
    await storedVersion(org, ws);
    return { method: "GET", path: `/api/v2/workspaces/${ws}/current-state-version` };
  },
  role: "reader",
});
describeAccess("GET /api/v2/workspaces/{id}/current-state-version", {
  target: async (org) => {
    const ws = await seedWorkspace(org);
    await storedVersion(org, ws);
    return {
      method: "GET",
      path: `/api/v2/workspaces/${ws}/current-state-version`,
      workspaceId: ws,
    };
  },
  level: "read",
  allowedStatus: 200,
});

for (const suffix of ["", "/download"]) {
  describeAuth(`GET /api/v2/state-versions/{id}${suffix}`, {
    target: async (org) => {
      const ws = await seedWorkspace(org);
      return {
        method: "GET",
        path: `/api/v2/state-versions/${await storedVersion(org, ws)}${suffix}`,
      };
    },
    role: "reader",
  });
  describeAccess(`GET /api/v2/state-versions/{id}${suffix}`, {
    target: async (org) => {
      const ws = await seedWorkspace(org);
      return {
        method: "GET",
        path: `/api/v2/state-versions/${await storedVersion(org, ws)}${suffix}`,
        workspaceId: ws,
      };
    },
    level: suffix === "" ? "read" : "write",
    allowedStatus: 200,
  });
}

const createTarget = async (org: TestOrg) => {
  const ws = await seedWorkspace(org);
  const body = JSON.stringify(
    await createDocument(stateJson({ serial: 1, lineage: "lin" }), { inline: true }),
  );
  return {
    method: "POST",
    path: `/api/v2/workspaces/${ws}/state-versions`,
    body,
    headers: json,
    workspaceId: ws,
  };
};
describeAuth("POST /api/v2/workspaces/{id}/state-versions", {
  target: createTarget,
  role: "member",
});
describeAccess("POST /api/v2/workspaces/{id}/state-versions", {
  target: createTarget,
  level: "write",
  allowedStatus: 201,
});
