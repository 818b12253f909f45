/**
 * The dashboard's state page: outputs with sensitive values hidden, admin reveal (audited),
 * versions with downloads, the outputs diff, and rollback behind a typed confirmation; the
 * same roles as the API, another org's ids 404.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { diffOutputs } from "../../src/state/outputs.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { BackendClient, seedWorkspace, stateJson } from "./helpers/state-fixtures.ts";
import { signIn, type UiSession } from "./helpers/ui.ts";

const SECRET = "hunter2-state-page";

let org: TestOrg;
let ws: string;
let versions: { id: string; serial: number }[];
let admin: UiSession;
let member: UiSession;
let reader: UiSession;

beforeAll(async () => {
  org = await seedOrg();
  ws = await seedWorkspace(org);
  const lineage = crypto.randomUUID();
  const tf = new BackendClient(ws, org.tokens.member);
  const outputsAt = (serial: number) => ({
    url: { value: serial === 1 ? "https://old.internal" : "https://new.internal", type: "string" },
    db_password: { value: `${SECRET}-${serial}`, type: "string", sensitive: true },
    ...(serial === 1
      ? { legacy: { value: 1, type: "number" } }
      : { added: { value: true, type: "bool" } }),
  });
  for (const serial of [1, 2]) {
    const resources = [
      {
        mode: "managed",
        type: "terraform_data",
        name: "hello",
        instances: [{ attributes: { id: "1", input: `${SECRET}-attr` } }],
      },
    ];
    const body = stateJson({ serial, lineage, outputs: outputsAt(serial), resources });
    expect((await tf.put(body)).status).toBe(200);
  }
  const rows = await env.DB.prepare(
    "SELECT id, serial FROM state_versions WHERE workspace_id = ? ORDER BY serial",
  )
    .bind(ws)
    .all<{ id: string; serial: number }>();
  versions = rows.results;
  [admin, member, reader] = await Promise.all([
    signIn(org.tokens.admin),
    signIn(org.tokens.member),
    signIn(org.tokens.reader),
  ]);
});

const v = (serial: number) => versions.find((x) => x.serial === serial)?.id ?? "";

describe("state page", () => {
  it("lists versions and current outputs, sensitive values hidden even for admins", async () => {
    for (const session of [reader, admin]) {
      const res = await session.get(`/ui/workspaces/${ws}/state`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html.startsWith("<!doctype html>")).toBe(true);
      expect(html).toContain("https://new.internal");
      expect(html).toContain("(sensitive, hidden)");
      expect(html).not.toContain(SECRET);
      expect(html).toContain(`/state/versions/${v(1)}/download`);
      expect(html).toMatch(/<time datetime="[^"]+" title="[^"]+ UTC" data-relative="">/);
    }
    const readerHtml = await (await reader.get(`/ui/workspaces/${ws}/state`)).text();
    // The current state's resources by address, no attribute values.
    expect(readerHtml).toContain("<h2>Resources</h2>");
    expect(readerHtml).toContain("<code>terraform_data.hello</code>");
    expect(readerHtml).not.toContain(`${SECRET}-attr`);
    expect(readerHtml).not.toContain("Reveal sensitive values");
    expect(readerHtml).not.toContain("Roll back");
    const adminHtml = await (await admin.get(`/ui/workspaces/${ws}/state`)).text();
    expect(adminHtml).toContain("Reveal sensitive values");
    expect(adminHtml).toContain('data-expected="serial 1"');
  });

  it("reveals to admins only, and audits it", async () => {
    const refused = await member.post(`/ui/workspaces/${ws}/state/reveal`);
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain(SECRET);
    const shown = await admin.post(`/ui/workspaces/${ws}/state/reveal`);
    expect(shown.status).toBe(200);
    expect(await shown.text()).toContain(`${SECRET}-2`);
    const audit = await env.DB.prepare(
      "SELECT count(*) AS n FROM audit_events WHERE action = 'state.outputs.reveal' AND target_id = ?",
    )
      .bind(ws)
      .first<{ n: number }>();
    expect(audit?.n).toBe(1);
    const noCsrf = await admin.post(`/ui/workspaces/${ws}/state/reveal`, {}, null);
    expect(noCsrf.status).toBe(403);
  });

  it("diffs two versions' outputs without showing sensitive values", async () => {
    const res = await reader.get(`/ui/workspaces/${ws}/state?from=${v(1)}&to=${v(2)}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const diff = html.slice(html.indexOf('id="outputs-diff"'));
    expect(diff).toMatch(/class="change-added"><td class="mono">added/);
    expect(diff).toMatch(/class="change-removed"><td class="mono">legacy/);
    expect(diff).toMatch(/class="change-changed"><td class="mono">db_password/);
    expect(diff).toContain("https://old.internal");
    expect(html).not.toContain(SECRET);
    const bad = await reader.get(`/ui/workspaces/${ws}/state?from=nope&to=${v(2)}`);
    expect(bad.status).toBe(400);
  });

  it("downloads a version byte for byte", async () => {
    const res = await reader.get(`/ui/workspaces/${ws}/state/versions/${v(1)}/download`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toMatch(/attachment; filename=".*-1\.tfstate"/);
    const state = (await res.json()) as { serial: number };
    expect(state.serial).toBe(1);
  });

  it("rolls back only for admins who type the serial", async () => {
    const path = `/ui/workspaces/${ws}/state/versions/${v(1)}/rollback`;
    const before = await snapshotD1();
    expect((await member.post(path, { confirm: "serial 1" })).status).toBe(403);
    const wrong = await admin.post(path, { confirm: "serial 2" });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain("type &quot;serial 1&quot; to confirm");
    expect(await snapshotD1()).toEqual(before);
    const done = await admin.post(path, { confirm: "serial 1" });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe(`/ui/workspaces/${ws}/state?done=rolled-back`);
    const page = await (await reader.get(`/ui/workspaces/${ws}/state`)).text();
    expect(page).toContain("https://old.internal");
    expect(page).toContain(`rollback to ${v(1)}`);
  });

  it("answers 404 for another organization's workspace and versions", async () => {
    const other = await seedOrg();
    const stranger = await signIn(other.tokens.admin);
    for (const path of [
      `/ui/workspaces/${ws}/state`,
      `/ui/workspaces/${ws}/state/versions/${v(1)}/download`,
    ]) {
      expect((await stranger.get(path)).status).toBe(404);
    }
    expect((await stranger.post(`/ui/workspaces/${ws}/state/reveal`)).status).toBe(404);
  });
});

describe("diffOutputs", () => {
  it("compares values in full, ignoring key order, and hides sensitive ones", () => {
    const changes = diffOutputs(
      { a: { value: { x: 1, y: 2 } }, s: { value: "p1", sensitive: true }, gone: { value: 1 } },
      { a: { value: { y: 2, x: 1 } }, s: { value: "p2", sensitive: true }, new: { value: [1] } },
    );
    expect(changes).toEqual([
      {
        name: "a",
        change: "unchanged",
        sensitive: false,
        before: { x: 1, y: 2 },
        after: { y: 2, x: 1 },
      },
      { name: "gone", change: "removed", sensitive: false, before: 1, after: null },
      { name: "new", change: "added", sensitive: false, before: null, after: [1] },
      { name: "s", change: "changed", sensitive: true, before: null, after: null },
    ]);
  });
});
