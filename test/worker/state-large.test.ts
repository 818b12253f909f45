/**
 * Large states flow through: a 20 MB state is written (with Content-Length, and as a chunked
 * stream without it, which goes to R2 as a multipart upload), read back byte for byte, and
 * rolled back, without the Worker holding the body.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { BackendClient, basicAuth, md5Base64, seedWorkspace } from "./helpers/state-fixtures.ts";

const MB = 1024 * 1024;

/** A format-4 state of about `bytes`, many resources with long attributes, like a big estate. */
function bigState(serial: number, lineage: string, bytes: number): Uint8Array {
  const filler = "x".repeat(4000);
  const resources: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const r = JSON.stringify({
      mode: "managed",
      type: "vsphere_virtual_machine",
      name: `vm_${i}`,
      provider: 'provider["registry.terraform.io/hashicorp/vsphere"]',
      instances: [
        {
          schema_version: 3,
          attributes: { id: `vm-${i}`, annotation: filler, tags: ['a"b', "ü"] },
        },
      ],
    });
    resources.push(r);
    size += r.length + 1;
  }
  const text = `{"version":4,"terraform_version":"1.9.5","serial":${serial},"lineage":"${lineage}","outputs":{"count":{"value":${resources.length},"type":"number"}},"resources":[${resources.join(",")}],"check_results":null}\n`;
  return new TextEncoder().encode(text);
}

/** Splits bytes into a stream of uneven chunks, as a network would deliver them. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      const size = 65_521 + (at % 7919);
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function sha(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))));
}

// Tens of MB through workerd, Miniflare's R2 and SHA comparisons take seconds, not milliseconds.
describe("20 MB states", { timeout: 120_000 }, () => {
  it("are written with Content-Length and read back byte for byte", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const tf = new BackendClient(ws, org.tokens.member);
    const lineage = crypto.randomUUID();
    const body = bigState(1, lineage, 20 * MB);
    expect(body.length).toBeGreaterThan(20 * MB);
    const put = await tf.put(body);
    expect(put.status, await put.clone().text()).toBe(200);
    const read = await tf.get();
    expect(read.status).toBe(200);
    expect(read.headers.get("content-length")).toBe(String(body.length));
    expect(read.headers.get("content-md5")).toBe(await md5Base64(body));
    expect(await sha(await read.arrayBuffer())).toBe(await sha(body));
    const outputs = await requestJson<{ outputs: { count: { value: number } } }>(
      `/api/v1/workspaces/${ws}/outputs`,
      { token: org.tokens.reader },
    );
    expect(outputs.body.outputs.count.value).toBeGreaterThan(4000);
  });

  it("are written as a stream without Content-Length (multipart to R2) and rolled back", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const lineage = crypto.randomUUID();
    const first = bigState(1, lineage, 20 * MB);
    const res = await exports.default.fetch(
      new Request(`${BASE}/state/v1/${ws}`, {
        method: "POST",
        headers: {
          ...basicAuth(org.tokens.member),
          "content-type": "application/json",
          "content-md5": await md5Base64(first),
        },
        body: chunked(first),
      }),
    );
    expect(res.status, await res.clone().text()).toBe(200);
    const tf = new BackendClient(ws, org.tokens.member);
    expect((await tf.put(bigState(2, lineage, MB))).status).toBe(200);

    const v1 = await env.DB.prepare(
      "SELECT id, size_bytes FROM state_versions WHERE workspace_id = ? AND serial = 1",
    )
      .bind(ws)
      .first<{ id: string; size_bytes: number }>();
    expect(v1?.size_bytes).toBe(first.length);
    const key = await env.DB.prepare("SELECT r2_key FROM state_versions WHERE id = ?")
      .bind(v1?.id)
      .first<{ r2_key: string }>();
    // A multipart object's etag ends in -<part count>: 20 MB went up in 8 MiB parts.
    expect((await env.BLOBS.head(key?.r2_key ?? ""))?.etag).toMatch(/-3$/);
    const rollback = await requestJson<{ serial: number }>(
      `/api/v1/workspaces/${ws}/state-versions/${v1?.id}/rollback`,
      { method: "POST", token: org.tokens.admin },
    );
    expect(rollback.status).toBe(201);
    expect(rollback.body.serial).toBe(3);
    const restored = new Uint8Array(await (await tf.get()).arrayBuffer());
    expect(await sha(restored)).toBe(await sha(bigState(3, lineage, 20 * MB)));
  });

  it("a body over the limit streamed without Content-Length is refused (413) and leaves nothing", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        // A valid JSON prefix that never ends, so only the size limit can stop it.
        controller.enqueue(
          new TextEncoder().encode(sent === 0 ? '{"version":4,"resources":["' : "y".repeat(MB)),
        );
        sent++;
      },
    });
    const res = await exports.default.fetch(
      new Request(`${BASE}/state/v1/${ws}`, {
        method: "POST",
        headers: basicAuth(org.tokens.member),
        body: endless,
      }),
    );
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(110);
    const listed = await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` });
    expect(listed.objects).toEqual([]);
  });
});
