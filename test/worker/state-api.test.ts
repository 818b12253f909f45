/** The state API under /api/v1/workspaces/:id: history, download, outputs, rollback, the lock. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deleteWorkspaceStateBlobs } from "../../src/state/blobs.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  BackendClient,
  lockInfo,
  md5Base64,
  seedRun,
  seedWorkspace,
  stateJson,
} from "./helpers/state-fixtures.ts";

type Version = {
  id: string;
  serial: number;
  lineage: string;
  md5: string;
  sizeBytes: number;
  isCurrent: boolean;
  restoredFromId: string | null;
  createdBy: string | null;
  terraformVersion: string | null;
  outputsStatus: string;
};
type Page = { stateVersions: Version[]; nextCursor: string | null };
type Outputs = {
  stateVersionId: string | null;
  serial: number | null;
  outputsStatus: string | null;
  isRevealed: boolean;
  outputs: Record<string, { value: unknown; type: unknown; sensitive: boolean }>;
};

const outputs = {
  url: { value: "https://app.internal", type: "string" },
  db_password: { value: "hunter2", type: "string", sensitive: true },
  ports: { value: [80, 443], type: ["list", "number"] },
};

/** A local workspace with `count` versions written by terraform (serials 1..count). */
async function withHistory(org: TestOrg, count: number): Promise<{ ws: string; lineage: string }> {
  const ws = await seedWorkspace(org);
  const lineage = crypto.randomUUID();
  const tf = new BackendClient(ws, org.tokens.member);
  for (let serial = 1; serial <= count; serial++) {
    const res = await tf.put(
      stateJson({
        serial,
        lineage,
        outputs: { ...outputs, serial: { value: serial, type: "number" } },
      }),
    );
    expect(res.status).toBe(200);
  }
  return { ws, lineage };
}

describe("GET /api/v1/workspaces/:id/state-versions", () => {
  it("lists versions newest first with paging and marks the current one", async () => {
    const org = await seedOrg();
    const { ws, lineage } = await withHistory(org, 5);
    const first = await requestJson<Page>(`/api/v1/workspaces/${ws}/state-versions?limit=2`, {
      token: org.tokens.reader,
    });
    expect(first.status).toBe(200);
    expect(first.body.stateVersions.map((v) => v.serial)).toEqual([5, 4]);
    expect(first.body.stateVersions[0]).toMatchObject({
      isCurrent: true,
      lineage,
      terraformVersion: "1.9.5",
    });
    expect(first.body.stateVersions[1]?.isCurrent).toBe(false);
    const seen = [...first.body.stateVersions];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const next = await requestJson<Page>(
        `/api/v1/workspaces/${ws}/state-versions?limit=2&cursor=${cursor}`,
        { token: org.tokens.reader },
      );
      seen.push(...next.body.stateVersions);
      cursor = next.body.nextCursor;
    }
    expect(seen.map((v) => v.serial)).toEqual([5, 4, 3, 2, 1]);
  });

  it("answers 400 for a bad cursor, limit or id", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    for (const path of [
      `/api/v1/workspaces/${ws}/state-versions?cursor=zzz`,
      `/api/v1/workspaces/${ws}/state-versions?limit=0`,
      `/api/v1/workspaces/${ws}/state-versions?limit=101`,
      "/api/v1/workspaces/nope/state-versions",
      `/api/v1/workspaces/${ws}/state-versions/nope`,
    ]) {
      const res = await requestJson<ErrorBody>(path, { token: org.tokens.reader });
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
    }
  });
});

describe("GET state-versions/:svId and /download", () => {
  it("shows one version and streams its body byte for byte with Content-MD5 to an admin", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const body = stateJson({ serial: 1, lineage: "l", outputs });
    const tf = new BackendClient(ws, org.tokens.member);
    const written = (await (await tf.put(body)).json()) as { stateVersionId: string };
    const one = await requestJson<Version>(
      `/api/v1/workspaces/${ws}/state-versions/${written.stateVersionId}`,
      { token: org.tokens.reader },
    );
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      serial: 1,
      sizeBytes: body.length,
      isCurrent: true,
      outputsStatus: "stored",
    });
    const download = await request(
      `/api/v1/workspaces/${ws}/state-versions/${written.stateVersionId}/download`,
      { token: org.tokens.admin },
    );
    expect(download.status).toBe(200);
    expect(await download.text()).toBe(body);
    expect(download.headers.get("content-md5")).toBe(
      await md5Base64(new TextEncoder().encode(body)),
    );
    const missing = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws}/state-versions/sv_${"a".repeat(26)}`,
      { token: org.tokens.reader },
    );
    expect(missing.status).toBe(404);
  });
});

describe("GET /api/v1/workspaces/:id/outputs", () => {
  it("hides sensitive values from every role by default", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 2);
    for (const role of ["reader", "member", "admin", "owner"] as const) {
      const res = await requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs`, {
        token: org.tokens[role],
      });
      expect(res.status).toBe(200);
      expect(res.body.serial).toBe(2);
      expect(res.body.outputs.db_password).toEqual({
        value: null,
        type: "string",
        sensitive: true,
      });
      expect(res.body.outputs.url).toEqual({
        value: "https://app.internal",
        type: "string",
        sensitive: false,
      });
      expect(res.body.outputs.serial?.value).toBe(2);
      expect(JSON.stringify(res.body)).not.toContain("hunter2");
    }
  });

  it("reveals sensitive values to admins who ask, audited; refuses below admin (403)", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 2);
    for (const role of ["reader", "member"] as const) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws}/outputs?reveal=true`, {
        token: org.tokens[role],
      });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/needs the admin or owner role/);
      expect(await snapshotD1()).toEqual(before);
    }
    for (const role of ["admin", "owner"] as const) {
      const res = await requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs?reveal=true`, {
        token: org.tokens[role],
      });
      expect(res.status).toBe(200);
      expect(res.body.isRevealed).toBe(true);
      expect(res.body.outputs.db_password?.value).toBe("hunter2");
      expect(res.body.outputs.ports?.value).toEqual([80, 443]);
    }
    const audit = await env.DB.prepare(
      "SELECT actor, data FROM audit_events WHERE action = 'state.outputs.reveal' AND target_id = ? ORDER BY created_at",
    )
      .bind(ws)
      .all<{ actor: string; data: string }>();
    expect(audit.results).toHaveLength(2);
    expect(JSON.parse(audit.results[0]?.data ?? "{}")).toMatchObject({ outputs: ["db_password"] });
    expect(JSON.stringify(audit.results)).not.toContain("hunter2");
    const bad = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws}/outputs?reveal=yes`, {
      token: org.tokens.admin,
    });
    expect(bad.status).toBe(400);
  });

  it("reads any version's outputs with the same rules", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 3);
    const page = await requestJson<Page>(`/api/v1/workspaces/${ws}/state-versions`, {
      token: org.tokens.reader,
    });
    const first = page.body.stateVersions.find((v) => v.serial === 1);
    const res = await requestJson<Outputs>(
      `/api/v1/workspaces/${ws}/state-versions/${first?.id}/outputs`,
      { token: org.tokens.reader },
    );
    expect(res.status).toBe(200);
    expect(res.body.serial).toBe(1);
    expect(res.body.outputs.serial?.value).toBe(1);
    expect(res.body.outputs.db_password?.value).toBeNull();
    const denied = await requestJson(
      `/api/v1/workspaces/${ws}/state-versions/${first?.id}/outputs?reveal=true`,
      { token: org.tokens.member },
    );
    expect(denied.status).toBe(403);
  });

  it("is readable by a run of a workspace it shares with, without sensitive values; 404 else", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 1);
    const run = await seedRun(org, await seedWorkspace(org, { executionMode: "agent" }));
    const read = () =>
      requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs`, { token: run.token });
    expect((await read()).status).toBe(404);
    await env.DB.prepare("UPDATE workspaces SET remote_state_sharing = 'organization' WHERE id = ?")
      .bind(ws)
      .run();
    const res = await read();
    expect(res.status).toBe(200);
    expect(res.body.outputs.db_password?.value).toBeNull();
  });

  it("answers empty outputs for no state and says when a state is encrypted", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const empty = await requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs`, {
      token: org.tokens.reader,
    });
    expect(empty.body).toEqual({
      stateVersionId: null,
      serial: null,
      outputsStatus: null,
      isRevealed: false,
      outputs: {},
    });
    const envelope = JSON.stringify({
      serial: 1,
      lineage: "l",
      meta: {},
      encrypted_data: "AAAA",
      encryption_version: "v0",
    });
    await new BackendClient(ws, org.tokens.member).put(envelope);
    const encrypted = await requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs`, {
      token: org.tokens.admin,
    });
    expect(encrypted.body).toMatchObject({ serial: 1, outputsStatus: "encrypted", outputs: {} });
  });
});

describe("POST state-versions/:svId/rollback", () => {
  it("writes the old body as a new version with a serial above the current one", async () => {
    const org = await seedOrg();
    const { ws, lineage } = await withHistory(org, 3);
    const page = await requestJson<Page>(`/api/v1/workspaces/${ws}/state-versions`, {
      token: org.tokens.admin,
    });
    const v1 = page.body.stateVersions.find((v) => v.serial === 1);
    const res = await requestJson<Version>(
      `/api/v1/workspaces/${ws}/state-versions/${v1?.id}/rollback`,
      {
        method: "POST",
        token: org.tokens.admin,
      },
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ serial: 4, lineage, isCurrent: true, restoredFromId: v1?.id });

    const tf = new BackendClient(ws, org.tokens.member);
    const current = await tf.get();
    const text = await current.text();
    const expected = stateJson({
      serial: 4,
      lineage,
      outputs: { ...outputs, serial: { value: 1, type: "number" } },
    });
    expect(text).toBe(expected);
    const outputsNow = await requestJson<Outputs>(`/api/v1/workspaces/${ws}/outputs`, {
      token: org.tokens.admin,
    });
    expect(outputsNow.body.outputs.serial?.value).toBe(1);
    // Terraform moves on from the restored state: its next write is serial 5.
    expect((await tf.put(stateJson({ serial: 5, lineage }))).status).toBe(200);
    const audit = await env.DB.prepare("SELECT action FROM audit_events WHERE target_id = ?")
      .bind(ws)
      .all();
    expect(audit.results).toEqual([{ action: "state.rollback" }]);
  });

  it("refuses while locked, for the current version, across lineages, and unknown versions", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 2);
    const page = await requestJson<Page>(`/api/v1/workspaces/${ws}/state-versions`, {
      token: org.tokens.admin,
    });
    const [v2, v1] = page.body.stateVersions;
    const rollback = (id: string | undefined) =>
      requestJson<ErrorBody>(`/api/v1/workspaces/${ws}/state-versions/${id}/rollback`, {
        method: "POST",
        token: org.tokens.admin,
      });
    const tf = new BackendClient(ws, org.tokens.member);
    await tf.lock();
    let before = await snapshotD1();
    const locked = await rollback(v1?.id);
    expect(locked.status).toBe(409);
    expect(locked.body.error.message).toContain("locked");
    expect(await snapshotD1()).toEqual(before);
    await tf.unlock();

    before = await snapshotD1();
    expect((await rollback(v2?.id)).status).toBe(409);
    expect((await rollback(`sv_${"b".repeat(26)}`)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);

    await new BackendClient(ws, org.tokens.admin).send("DELETE", `/state/v1/${ws}`);
    await tf.put(stateJson({ serial: 1, lineage: "new-lineage" }));
    const foreign = await rollback(v1?.id);
    expect(foreign.status).toBe(409);
    expect(foreign.body.error.message).toContain("lineage");
  });
});

describe("state lock API", () => {
  it("shows the lock; force-unlock releases it (audited), honours lockId, and is idempotent", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const info = lockInfo("OperationTypeApply", "carol@ci");
    await new BackendClient(ws, org.tokens.member).lock(info);
    const shown = await requestJson<{ lock: { id: string; info: unknown } | null }>(
      `/api/v1/workspaces/${ws}/state-lock`,
      { token: org.tokens.reader },
    );
    expect(shown.body.lock).toMatchObject({ id: info.ID, info });

    const mismatch = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws}/state-lock?lockId=other`,
      {
        method: "DELETE",
        token: org.tokens.admin,
      },
    );
    expect(mismatch.status).toBe(409);
    const released = await requestJson<{ released: { id: string } | null }>(
      `/api/v1/workspaces/${ws}/state-lock?lockId=${info.ID}`,
      { method: "DELETE", token: org.tokens.admin },
    );
    expect(released.status).toBe(200);
    expect(released.body.released?.id).toBe(info.ID);
    const again = await requestJson<{ released: unknown }>(`/api/v1/workspaces/${ws}/state-lock`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(again.body.released).toBeNull();
    const audit = await env.DB.prepare("SELECT action FROM audit_events WHERE target_id = ?")
      .bind(ws)
      .all();
    expect(audit.results).toEqual([{ action: "state.force_unlock" }]);
  });
});

describe("deleteWorkspaceStateBlobs", () => {
  it("removes every state object of the workspace and nothing else", async () => {
    const org = await seedOrg();
    const { ws } = await withHistory(org, 2);
    const { ws: kept } = await withHistory(org, 1);
    expect(await deleteWorkspaceStateBlobs(env.BLOBS, org.orgId, ws)).toBe(4); // 2 bodies + 2 outputs
    const left = await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` });
    expect(left.objects.map((o) => o.key).every((key) => key.includes(kept))).toBe(true);
    expect(left.objects.length).toBe(2);
  });
});

async function svOf(org: TestOrg): Promise<{ ws: string; sv: string }> {
  const { ws } = await withHistory(org, 2);
  const row = await env.DB.prepare(
    "SELECT id FROM state_versions WHERE workspace_id = ? AND serial = 1",
  )
    .bind(ws)
    .first<{ id: string }>();
  return { ws, sv: row?.id ?? "" };
}

describeAuth("GET /api/v1/workspaces/:id/state-versions", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await seedWorkspace(org)}/state-versions`,
  }),
});
describeAuth("GET /api/v1/workspaces/:id/state-versions/:svId", {
  role: "reader",
  target: async (org) => {
    const { ws, sv } = await svOf(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws}/state-versions/${sv}` };
  },
});
describeAuth("GET /api/v1/workspaces/:id/state-versions/:svId/download", {
  role: "reader",
  target: async (org) => {
    const { ws, sv } = await svOf(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws}/state-versions/${sv}/download` };
  },
});
describeAuth("POST /api/v1/workspaces/:id/state-versions/:svId/rollback", {
  role: "admin",
  target: async (org) => {
    const { ws, sv } = await svOf(org);
    return { method: "POST", path: `/api/v1/workspaces/${ws}/state-versions/${sv}/rollback` };
  },
});
describeAuth("GET /api/v1/workspaces/:id/outputs", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await seedWorkspace(org)}/outputs`,
  }),
});
describeAuth("GET /api/v1/workspaces/:id/outputs?reveal=true", {
  role: "admin",
  target: async (org) => {
    const { ws } = await svOf(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws}/outputs?reveal=true` };
  },
});
describeAuth("GET /api/v1/workspaces/:id/state-versions/:svId/outputs", {
  role: "reader",
  target: async (org) => {
    const { ws, sv } = await svOf(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws}/state-versions/${sv}/outputs` };
  },
});
describeAuth("GET /api/v1/workspaces/:id/state-lock", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await seedWorkspace(org)}/state-lock`,
  }),
});
describeAuth("DELETE /api/v1/workspaces/:id/state-lock", {
  role: "admin",
  target: async (org) => {
    const ws = await seedWorkspace(org);
    await new BackendClient(ws, org.tokens.member).lock();
    return { method: "DELETE", path: `/api/v1/workspaces/${ws}/state-lock` };
  },
});
