/**
 * Hostile and broken uploads: each is refused with a 4xx and leaves nothing in D1 or R2.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { uploadConfigurationVersion } from "../../src/configuration-versions/service.ts";
import { systemClock } from "../../src/deps.ts";
import type { ErrorBody } from "./helpers/api.ts";
import { upload } from "./helpers/configuration-versions.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { deps, seedOrg, type TestOrg, tokenActor } from "./helpers/fixtures.ts";
import {
  GNU_ABSOLUTE_TAR_GZ,
  GNU_DOTDOT_TAR_GZ,
  GNU_FIFO_TAR_GZ,
} from "./helpers/gnu-tar-fixtures.ts";
import { concat, fromBase64, gzip, type TarTestEntry, tar, tarGz } from "./helpers/tarball.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const file = (name: string, body = "# tf\n"): TarTestEntry => ({ name, body });

async function expectRefused(
  org: TestOrg,
  workspaceId: string,
  bytes: Uint8Array,
  status: number,
  message: RegExp,
): Promise<void> {
  const before = await snapshotD1();
  const res = await upload(org, workspaceId, bytes);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.message).toMatch(message);
  expect(await snapshotD1()).toEqual(before);
  expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
}

const HOSTILE: { name: string; archive: () => Promise<Uint8Array>; message: RegExp }[] = [
  {
    name: "absolute path",
    archive: () => tarGz([file("main.tf"), file("/etc/cron.d/evil")]),
    message: /absolute path/,
  },
  { name: "../x", archive: () => tarGz([file("../x")]), message: /contains '\.\.'/ },
  { name: "a/../../x", archive: () => tarGz([file("a/../../x")]), message: /contains '\.\.'/ },
  {
    name: "a/.. inside the tree (still refused: no '..' at all)",
    archive: () => tarGz([file("a/../b.tf")]),
    message: /contains '\.\.'/,
  },
  {
    name: "backslash path",
    archive: () => tarGz([file("..\\..\\evil.tf")]),
    message: /contains a backslash/,
  },
  {
    name: "Windows drive path",
    archive: () => tarGz([file("C:/Windows/evil")]),
    message: /absolute path/,
  },
  {
    name: "symlink to /etc/passwd",
    archive: () =>
      tarGz([file("main.tf"), { name: "passwd", type: "symlink", linkname: "/etc/passwd" }]),
    message: /symlink "passwd" points outside/,
  },
  {
    name: "symlink climbing out of a subdirectory",
    archive: () => tarGz([{ name: "mod/escape", type: "symlink", linkname: "../../x" }]),
    message: /symlink "mod\/escape" points outside/,
  },
  {
    name: "hard link to ../x",
    archive: () => tarGz([{ name: "h", type: "link", linkname: "../x" }]),
    message: /hard link "h" points outside/,
  },
  {
    name: "hard link to an absolute path",
    archive: () => tarGz([{ name: "h", type: "link", linkname: "/etc/shadow" }]),
    message: /hard link "h" points outside/,
  },
  {
    name: "symlink whose target walks through another symlink",
    archive: () =>
      tarGz([
        { name: "l", type: "symlink", linkname: "d/up/.." },
        { name: "d/", type: "dir" },
        { name: "d/up", type: "symlink", linkname: ".." },
      ]),
    message: /symlink "l" points outside/,
  },
  {
    name: "entry written through a symlink",
    archive: () => tarGz([{ name: "out", type: "symlink", linkname: "." }, file("out/main.tf")]),
    message: /goes through the symlink "out"/,
  },
  { name: "FIFO", archive: () => tarGz([{ name: "pipe", type: "fifo" }]), message: /is a fifo/ },
  {
    name: "character device",
    archive: () => tarGz([{ name: "dev/null", type: "char" }]),
    message: /is a character-device/,
  },
  {
    name: "block device",
    archive: () => tarGz([{ name: "sda", type: "block" }]),
    message: /is a block-device/,
  },
  {
    name: "pax header renaming an innocent entry to ../evil",
    archive: () =>
      tarGz([{ name: "PaxHeader", type: "pax", pax: { path: "../evil" } }, file("innocent.tf")]),
    message: /"\.\.\/evil" contains '\.\.'/,
  },
  {
    name: "pax header pointing a symlink at /",
    archive: () =>
      tarGz([
        { name: "PaxHeader", type: "pax", pax: { linkpath: "/" } },
        { name: "root", type: "symlink", linkname: "ok" },
      ]),
    message: /symlink "root" points outside/,
  },
  {
    name: "GNU long name ../../evil",
    archive: () =>
      tarGz([
        { name: "././@LongLink", type: "gnu-long-name", body: "../../evil\0" },
        file("short"),
      ]),
    message: /contains '\.\.'/,
  },
  {
    name: "ustar prefix making the name absolute",
    archive: () => tarGz([{ name: "passwd", prefix: "/etc", body: "x" }]),
    message: /absolute path/,
  },
  {
    name: "GNU tar archive of ../secret.tf",
    archive: async () => fromBase64(GNU_DOTDOT_TAR_GZ),
    message: /contains '\.\.'/,
  },
  {
    name: "GNU tar archive of an absolute path",
    archive: async () => fromBase64(GNU_ABSOLUTE_TAR_GZ),
    message: /absolute path/,
  },
  {
    name: "GNU tar archive with a real FIFO",
    archive: async () => fromBase64(GNU_FIFO_TAR_GZ),
    message: /is a fifo/,
  },
];

const BROKEN: { name: string; archive: () => Promise<Uint8Array>; message: RegExp }[] = [
  {
    name: "truncated in the middle of a body",
    archive: async () => gzip(tar([file("main.tf", "x".repeat(2000))]).subarray(0, 1024)),
    message: /not a valid tar archive/,
  },
  {
    name: "without the end-of-archive blocks",
    archive: () => tarGz([file("main.tf")], { eof: false }),
    message: /not a valid tar archive/,
  },
  {
    name: "a corrupted header checksum",
    archive: () => tarGz([{ name: "main.tf", body: "x", badChecksum: true }]),
    message: /not a valid tar archive/,
  },
  {
    name: "not gzip (a plain tar)",
    archive: async () => tar([file("main.tf")]),
    message: /not valid gzip/,
  },
  {
    name: "random bytes",
    archive: async () => crypto.getRandomValues(new Uint8Array(4096)),
    message: /not valid gzip/,
  },
  {
    name: "a truncated gzip stream",
    archive: async () => (await tarGz([file("main.tf", "y".repeat(5000))])).subarray(0, 40),
    message: /not valid gzip|not a valid tar/,
  },
  {
    name: "gzip of something that is not tar",
    archive: () => gzip(new TextEncoder().encode('resource "x" "y" {}\n'.repeat(100))),
    message: /not a valid tar archive/,
  },
  {
    name: "an empty tar",
    archive: () => tarGz([]),
    message: /no entries/,
  },
];

describe("hostile configuration uploads", () => {
  for (const { name, archive, message } of HOSTILE) {
    it(`refuses ${name} with 400 and stores nothing`, async () => {
      const org = await seedOrg();
      const ws = await createWorkspace(org);
      await expectRefused(org, ws.id, await archive(), 400, message);
    });
  }
});

describe("broken configuration uploads", () => {
  for (const { name, archive, message } of BROKEN) {
    it(`refuses ${name} with 400 and stores nothing`, async () => {
      const org = await seedOrg();
      const ws = await createWorkspace(org);
      await expectRefused(org, ws.id, await archive(), 400, message);
    });
  }
});

describe("configured upload limits", () => {
  async function uploadWith(
    limits: Record<string, string>,
    org: TestOrg,
    ws: string,
    bytes: Uint8Array,
  ) {
    const res = await newApp(systemClock).request(
      `/api/v1/workspaces/${ws}/configuration-versions`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${org.tokens.member}`,
          "content-type": "application/gzip",
          // Set by the runtime on the wire; a Request built here has none unless given.
          "content-length": String(bytes.byteLength),
        },
        body: bytes,
      },
      { ...env, ...limits },
      createExecutionContext(),
    );
    return { status: res.status, body: (await res.json()) as ErrorBody };
  }

  it("refuses a gzip bomb past CONFIGURATION_MAX_UNPACKED_BYTES with 413, storing nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const bomb = await tarGz([
      { name: "main.tf", body: "# config\n" },
      { name: "zeros.bin", body: new Uint8Array(8 * 1024 * 1024) },
    ]);
    expect(bomb.byteLength).toBeLessThan(64 * 1024);
    const before = await snapshotD1();
    const res = await uploadWith(
      { CONFIGURATION_MAX_UNPACKED_BYTES: String(1024 * 1024) },
      org,
      ws.id,
      bomb,
    );
    expect(res.status).toBe(413);
    expect(res.body.error.message).toMatch(/unpacks to more than 1048576 bytes/);
    expect(await snapshotD1()).toEqual(before);
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
    // The same archive passes under the default limit.
    expect((await uploadWith({}, org, ws.id, bomb)).status).toBe(201);
  });

  it("refuses a body past CONFIGURATION_MAX_BYTES with 413", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const bytes = await tarGz([
      { name: "main.tf", body: "# config\n" },
      { name: "noise.bin", body: crypto.getRandomValues(new Uint8Array(4096)) },
    ]);
    const before = await snapshotD1();
    const res = await uploadWith({ CONFIGURATION_MAX_BYTES: "2048" }, org, ws.id, bytes);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(await snapshotD1()).toEqual(before);
    expect((await uploadWith({ CONFIGURATION_MAX_BYTES: "8192" }, org, ws.id, bytes)).status).toBe(
      201,
    );
  });

  const serviceUpload = (org: TestOrg, workspaceId: string, bytes: Uint8Array, limits: object) =>
    uploadConfigurationVersion(deps, {
      orgId: org.orgId,
      workspaceId,
      actor: tokenActor("test"),
      body: new Blob([bytes]).stream(),
      contentLength: bytes.byteLength,
      limits: {
        maxBytes: 1 << 20,
        maxUnpackedBytes: 1 << 30,
        maxEntries: 10,
        maxRatio: 100,
        ...limits,
      },
      expected: { engine: "terraform", workingDirectory: "" },
    });

  it("stops a stream that outgrows the limit while it is read, storing nothing", async () => {
    // The route checks Content-Length first; the service also counts, should a length lie.
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const noise = crypto.getRandomValues(new Uint8Array(8192));
    const bytes = await tarGz([{ name: "noise.bin", body: noise }]);
    const before = await snapshotD1();
    const result = await serviceUpload(org, ws.id, bytes, { maxBytes: 4096 });
    expect(result).toEqual({
      ok: false,
      reason: {
        kind: "too_large",
        message: "configuration refused: the body is larger than 4096 bytes",
      },
    });
    expect(await snapshotD1()).toEqual(before);
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
  });

  it("an upload racing a workspace delete leaves nothing behind", async () => {
    const org = await seedOrg();
    const gone = `ws_${"z".repeat(26)}`;
    const result = await serviceUpload(
      org,
      gone,
      await tarGz([{ name: "main.tf", body: "#" }]),
      {},
    );
    expect(result).toMatchObject({
      ok: false,
      reason: { kind: "not_found", message: "configuration refused: the workspace was deleted" },
    });
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
  });

  it("refuses an archive with more entries than allowed", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const entries = Array.from({ length: 11 }, (_, i) => ({ name: `f${i}.tf`, body: "#" }));
    const result = await serviceUpload(org, ws.id, await tarGz(entries), {});
    expect(result).toMatchObject({
      ok: false,
      reason: { kind: "too_large", message: "configuration refused: more than 10 entries" },
    });
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
    const ten = await serviceUpload(org, ws.id, await tarGz(entries.slice(1)), {});
    expect(ten.ok).toBe(true);
  });
});

const hex = (text: string) =>
  Uint8Array.from(text.match(/../g) ?? [], (h) => Number.parseInt(h, 16));

/**
 * Deflate's code for 1 MiB of zeros that follow zeros: a dynamic block, not final, ending on a
 * sync flush, so copies of it can follow one another. Made with Node's zlib:
 * `deflateRawSync(new Uint8Array(2 ** 20), { level: 9, finishFlush: Z_SYNC_FLUSH, dictionary:
 * new Uint8Array(32768) })`, 1036 bytes: these around 1016 zero bytes.
 */
const ZEROS_BLOCK = concat([
  hex("ecc1210100000080a0ffaf1d6105"),
  new Uint8Array(1016),
  hex("ae000000ffff"),
]);

/**
 * A gzip bomb of about `compressedBytes` (about 1000:1): a stored block with one tar entry that
 * claims 4 GiB and 32 KiB of zeros (the history the next blocks refer to), then copies of
 * {@link ZEROS_BLOCK}. No gzip trailer: nothing may inflate that far.
 */
function gzipBomb(compressedBytes: number): Uint8Array {
  const stored = new Uint8Array(512 + 32 * 1024);
  stored.set(tar([{ name: "zeros.bin", body: "" }], { eof: false }));
  const huge = 4 * 1024 * 1024 * 1024;
  stored.set(new TextEncoder().encode(`${huge.toString(8).padStart(11, "0")}\0`), 124);
  stored.fill(0x20, 148, 156);
  const sum = stored.subarray(0, 512).reduce((a, b) => a + b, 0);
  stored.set(new TextEncoder().encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148);
  const n = stored.byteLength;
  const parts: Uint8Array[] = [
    hex("1f8b08000000000000ff"),
    Uint8Array.from([0, n & 255, n >> 8, ~n & 255, (~n >> 8) & 255]),
    stored,
  ];
  let size = parts.reduce((total, p) => total + p.byteLength, 0);
  while (size < compressedBytes) {
    parts.push(ZEROS_BLOCK);
    size += ZEROS_BLOCK.byteLength;
  }
  return concat(parts);
}

describe("gzip bombs", () => {
  it("stops a 2 MiB bomb at the ratio limit after reading a small part of it, with 413", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const bomb = gzipBomb(2 * 1024 * 1024);
    let read = 0;
    // Handed out in 16 KiB pieces on demand, so `read` is what the route actually pulled.
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (read >= bomb.byteLength) {
            controller.close();
            return;
          }
          const piece = bomb.slice(read, read + 16 * 1024);
          read += piece.byteLength;
          controller.enqueue(piece);
        },
      },
      { highWaterMark: 0 },
    );
    const before = await snapshotD1();
    const res = await newApp(systemClock).request(
      `/api/v1/workspaces/${ws.id}/configuration-versions`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${org.tokens.member}`,
          "content-type": "application/gzip",
          "content-length": String(bomb.byteLength),
        },
        body,
      },
      env,
      createExecutionContext(),
    );
    const answer = (await res.json()) as ErrorBody;
    expect(res.status, JSON.stringify(answer)).toBe(413);
    expect(answer.error.message).toMatch(/more than 100 times its compressed size/);
    // Past 16 MiB unpacked at 100:1: a few hundred KiB of the 2 MiB at most. Inflating to the
    // 1 GiB unpacked limit instead would have pulled about half of it.
    expect(read).toBeLessThan(256 * 1024);
    expect(await snapshotD1()).toEqual(before);
    expect((await env.BLOBS.list({ prefix: `orgs/${org.orgId}/` })).objects).toEqual([]);
  });
});
