import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { latestConfigurationVersion } from "../../src/configuration-versions/queries.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { GOOD_TREE, upload, type Version } from "./helpers/configuration-versions.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { GNU_TAR_GZ, PAX_TAR_GZ } from "./helpers/gnu-tar-fixtures.ts";
import { fromBase64, sha256Hex, tarGz } from "./helpers/tarball.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

describe("POST /api/v1/workspaces/:workspaceId/configuration-versions", () => {
  it("streams a tarball to R2 and records its sha256, size and an audit event", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const bytes = await tarGz(GOOD_TREE);
    const res = await upload(org, ws.name, bytes);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^cv_[a-z2-7]{26}$/),
      workspaceId: ws.id,
      source: "upload",
      sha256: await sha256Hex(bytes),
      sizeBytes: bytes.byteLength,
    });
    const object = await env.BLOBS.get(
      `orgs/${org.orgId}/workspaces/${ws.id}/configuration-versions/${res.body.id}.tar.gz`,
    );
    expect(new Uint8Array((await object?.arrayBuffer()) ?? new ArrayBuffer(0))).toEqual(bytes);
    const download = await request(
      `/api/v1/workspaces/${ws.id}/configuration-versions/${res.body.id}/download`,
      { token: org.tokens.reader },
    );
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/gzip");
    expect(download.headers.get("x-content-sha256")).toBe(res.body.sha256);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const row = await env.DB.prepare("SELECT * FROM configuration_versions WHERE id = ?")
      .bind(res.body.id)
      .first<Record<string, unknown>>();
    expect(row).toMatchObject({ sha256: res.body.sha256, size_bytes: bytes.byteLength });
    const audit = await env.DB.prepare("SELECT action FROM audit_events WHERE target_id = ?")
      .bind(res.body.id)
      .all<{ action: string }>();
    expect(audit.results).toEqual([{ action: "configuration_version.create" }]);
  });

  it("accepts archives made by GNU tar, in gnu and pax formats, as octet-stream too", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    for (const archive of [GNU_TAR_GZ, PAX_TAR_GZ]) {
      const bytes = fromBase64(archive);
      const res = await upload(org, ws.id, bytes, { "content-type": "application/octet-stream" });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.sha256).toBe(await sha256Hex(bytes));
    }
  });

  it("lists newest first a page at a time, gets one, and tells runs the latest", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await upload(org, ws.id, await tarGz([{ name: "main.tf", body: `# ${i}\n` }]));
      ids.push(res.body.id);
    }
    const latest = await latestConfigurationVersion(db, ws.id);
    expect(latest?.id).toBe(ids[2]);
    expect(await latestConfigurationVersion(db, (await createWorkspace(org)).id)).toBeUndefined();
    type Page = { configurationVersions: Version[]; nextCursor: string | null };
    const first = await requestJson<Page>(
      `/api/v1/workspaces/${ws.id}/configuration-versions?limit=2`,
      { token: org.tokens.reader },
    );
    expect(first.status).toBe(200);
    const second = await requestJson<Page>(
      `/api/v1/workspaces/${ws.id}/configuration-versions?limit=2&cursor=${first.body.nextCursor}`,
      { token: org.tokens.reader },
    );
    expect(
      [...first.body.configurationVersions, ...second.body.configurationVersions].map((v) => v.id),
    ).toEqual([...ids].reverse());
    expect(second.body.nextCursor).toBeNull();
    const one = await requestJson<Version>(
      `/api/v1/workspaces/${ws.name}/configuration-versions/${ids[0]}`,
      { token: org.tokens.reader },
    );
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(ids[0]);
    const elsewhere = await createWorkspace(org);
    const wrongWorkspace = await requestJson(
      `/api/v1/workspaces/${elsewhere.id}/configuration-versions/${ids[0]}`,
      { token: org.tokens.reader },
    );
    expect(wrongWorkspace.status).toBe(404);
    const badId = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws.id}/configuration-versions/run_${"a".repeat(26)}`,
      { token: org.tokens.reader },
    );
    expect(badId.status).toBe(400);
    const badCursor = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws.id}/configuration-versions?cursor=WyJ4Il0`,
      { token: org.tokens.reader },
    );
    expect(badCursor.status).toBe(400);
  });

  it("refuses a wrong content type (415), no Content-Length (411) and an empty body", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const bytes = await tarGz(GOOD_TREE);
    const before = await snapshotD1();
    for (const type of ["application/json", "text/plain", "application/x-tar"]) {
      const res = await upload(org, ws.id, bytes, { "content-type": type });
      expect(res.status, type).toBe(415);
      expect(res.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    }
    const untyped = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws.id}/configuration-versions`,
      {
        method: "POST",
        token: org.tokens.member,
        body: bytes,
      },
    );
    expect(untyped.status).toBe(415);
    const chunked = await request(`/api/v1/workspaces/${ws.id}/configuration-versions`, {
      method: "POST",
      token: org.tokens.member,
      // A stream of unknown length: sent chunked, without Content-Length.
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      }),
      headers: { "content-type": "application/gzip" },
    });
    expect(chunked.status).toBe(411);
    expect(((await chunked.json()) as ErrorBody).error.code).toBe("LENGTH_REQUIRED");
    const empty = await upload(org, ws.id, new Uint8Array(0));
    expect(empty.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
  });

  it("refuses by Content-Length before reading the body (413)", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    // The stream counts what anybody reads from it; refusing by the header must read ~nothing.
    let pulledBytes = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (pulledBytes >= 16 * 1024 * 1024) {
            controller.close();
            return;
          }
          pulledBytes += 64 * 1024;
          controller.enqueue(new Uint8Array(64 * 1024));
        },
      },
      { highWaterMark: 0 },
    );
    const before = await snapshotD1();
    const res = await request(`/api/v1/workspaces/${ws.id}/configuration-versions`, {
      method: "POST",
      token: org.tokens.member,
      body,
      headers: {
        "content-type": "application/gzip",
        "content-length": String(100 * 1024 * 1024 + 1),
      },
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as ErrorBody).error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(pulledBytes).toBeLessThan(1024 * 1024);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("an upload must hold a configuration the workspace can run", () => {
  async function expectRefused(
    org: Awaited<ReturnType<typeof seedOrg>>,
    ws: { id: string; name: string },
    bytes: Uint8Array,
    message: string,
  ) {
    const latestBefore = await latestConfigurationVersion(db, ws.id);
    const before = await snapshotD1();
    const res = await upload(org, ws.name, bytes);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.message).toContain(message);
    expect(await snapshotD1()).toEqual(before);
    expect(await latestConfigurationVersion(db, ws.id)).toEqual(latestBefore);
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toHaveLength(
      latestBefore ? 1 : 0,
    );
  }

  it("refuses a tar of only '.' or only a README, keeping the previous configuration", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const good = await upload(org, ws.id, await tarGz([{ name: "main.tf", body: "# ok\n" }]));
    expect(good.status).toBe(201);
    const missing = "the archive's top directory holds no .tf or .tf.json file";
    await expectRefused(org, ws, await tarGz([{ name: "./", type: "dir" }]), missing);
    await expectRefused(org, ws, await tarGz([{ name: "README.md", body: "# hi\n" }]), missing);
    // A .tf deeper down is not the root module the engine would run.
    await expectRefused(
      org,
      ws,
      await tarGz([{ name: "modules/vpc/main.tf", body: "# module\n" }]),
      missing,
    );
    expect((await latestConfigurationVersion(db, ws.id))?.id).toBe(good.body.id);
  });

  it("looks in the workspace's working directory, and takes .tf.json as well", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { workingDirectory: "envs/prod" });
    await expectRefused(
      org,
      ws,
      await tarGz([{ name: "main.tf", body: "# root\n" }]),
      "the working directory envs/prod of the archive holds no .tf or .tf.json file",
    );
    const json = await tarGz([{ name: "envs/prod/main.tf.json", body: "{}\n" }]);
    expect((await upload(org, ws.id, json)).status).toBe(201);
    const dotted = await tarGz([
      { name: "./envs/prod/", type: "dir" },
      { name: "./envs/prod/a.tf", body: "\n" },
    ]);
    expect((await upload(org, ws.id, dotted)).status).toBe(201);
  });

  it("wants Pulumi.yaml in a Pulumi workspace", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, {
      engine: "pulumi",
      engineVersion: "^3.150",
      stackName: "dev",
    });
    await expectRefused(
      org,
      ws,
      await tarGz([{ name: "main.tf", body: "# not pulumi\n" }]),
      "the archive's top directory holds no Pulumi.yaml",
    );
    const program = await tarGz([
      { name: "Pulumi.yaml", body: "name: demo\nruntime: nodejs\n" },
      { name: "index.js", body: "\n" },
    ]);
    expect((await upload(org, ws.id, program)).status).toBe(201);
  });
});

describeAuth("POST /api/v1/workspaces/:workspaceId/configuration-versions", {
  role: "member",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).id}/configuration-versions`,
    body: await tarGz([{ name: "main.tf", body: "# auth\n" }]),
    headers: { "content-type": "application/gzip" },
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/configuration-versions", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).id}/configuration-versions`,
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/configuration-versions/:id/download", {
  role: "reader",
  target: async (org) => {
    const ws = await createWorkspace(org);
    const res = await upload(org, ws.id, await tarGz([{ name: "main.tf", body: "# auth\n" }]));
    return {
      method: "GET",
      path: `/api/v1/workspaces/${ws.id}/configuration-versions/${res.body.id}/download`,
    };
  },
});
describeAuth("GET /api/v1/workspaces/:workspaceId/configuration-versions/:id", {
  role: "reader",
  target: async (org) => {
    const ws = await createWorkspace(org);
    const res = await upload(org, ws.id, await tarGz([{ name: "main.tf", body: "# auth\n" }]));
    return {
      method: "GET",
      path: `/api/v1/workspaces/${ws.id}/configuration-versions/${res.body.id}`,
    };
  },
});
