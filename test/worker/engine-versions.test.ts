/**
 * The engine versions the workspace forms offer come from the agents: each reports at
 * registration what its mirror lists and what it has cached or on its PATH, the pool keeps the
 * report with the agent (shown in the pool's agent list), and the dashboard's version field
 * suggests the live agents' versions of the org's pools, saying where each came from. A report
 * that breaks the protocol's grammar is refused whole; an exited agent's report no longer counts.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PoolStore } from "../../durable/pool-store.ts";
import { SCHEMA_VERSION } from "../../durable/schema.ts";
import { poolStub } from "../../src/pools/service.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { registerAgent, seedPool } from "./helpers/pools.ts";
import { signIn } from "./helpers/ui.ts";

const engines = [
  { engine: "terraform", version: "1.9.5", source: "mirror" },
  { engine: "terraform", version: "1.10.2", source: "mirror" },
  { engine: "terraform", version: "1.9.5", source: "cache" },
  { engine: "tofu", version: "1.8.3", source: "path" },
];

/** The `<datalist>` of the form with `prefix` for `engine`, as served. */
function datalist(html: string, prefix: string, engine: string): string {
  const match = new RegExp(
    `<datalist id="${prefix}-versions-${engine}">(.*?)</datalist>`,
    "s",
  ).exec(html);
  return match?.[1] ?? "";
}

describe("engine versions reported by agents", () => {
  it("are kept with the agent and suggested by the workspace forms with their sources", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token, { engines });
    const detail = await requestJson<{ name: string; agents: { id: string; engines: unknown }[] }>(
      `/api/v1/pools/${pool.poolId}`,
      { token: org.tokens.reader },
    );
    expect(detail.body.agents.find((a) => a.id === agentId)?.engines).toEqual(engines);

    const admin = await signIn(org.tokens.admin);
    const html = await (await admin.get("/ui/workspaces")).text();
    expect(html).toContain('list="new-versions-terraform"');
    const terraform = datalist(html, "new", "terraform");
    // latest, a constraint per minor release, then the versions newest first.
    expect([...terraform.matchAll(/value="([^"]+)"/g)].map((m) => m[1])).toEqual([
      "latest",
      "~&gt; 1.10.0",
      "~&gt; 1.9.0",
      "1.10.2",
      "1.9.5",
    ]);
    expect(terraform).toContain(
      `listed by the mirror, cached on an agent (pool ${detail.body.name})`,
    );
    expect(datalist(html, "new", "tofu")).toContain(
      `<option value="1.8.3">on an agent&#39;s PATH (pool ${detail.body.name})</option>`,
    );
    expect(datalist(html, "new", "pulumi")).not.toContain('value="1');

    // Another organization's agents are not offered.
    const other = await signIn((await seedOrg()).tokens.admin);
    expect(
      datalist(await (await other.get("/ui/workspaces")).text(), "new", "terraform"),
    ).not.toContain("1.10.2");
  });

  it("an exited agent's versions are no longer offered", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token, {
      engines: [{ engine: "terraform", version: "1.7.1", source: "cache" }],
    });
    const admin = await signIn(org.tokens.admin);
    expect(await (await admin.get("/ui/workspaces")).text()).toContain('value="1.7.1"');
    const bye = await requestJson("/agent/v1/goodbye", {
      method: "POST",
      token: pool.token,
      headers: { "outpost-agent-id": agentId },
      body: {},
    });
    expect(bye.status).toBeLessThan(300);
    expect(await (await admin.get("/ui/workspaces")).text()).not.toContain('value="1.7.1"');
  });

  it("an object written before agents reported them gains the column; its agents offer none", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    await registerAgent(pool.token, { name: "before", engines });
    // Turn the object's storage back into version 4's: no engines column.
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("ALTER TABLE agents DROP COLUMN engines");
      sql.exec("UPDATE settings SET value = '4' WHERE key = 'schema_version'");
      new PoolStore(sql).migrate();
      const version = sql
        .exec<{ value: string }>("SELECT value FROM settings WHERE key = 'schema_version'")
        .one().value;
      expect(version).toBe(String(SCHEMA_VERSION));
    });
    expect((await stub.listAgents()).map((a) => [a.name, a.engines])).toEqual([["before", []]]);
    await registerAgent(pool.token, { name: "after", engines: engines.slice(0, 1) });
    expect((await stub.listAgents()).map((a) => a.engines)).toEqual([[], engines.slice(0, 1)]);
  });

  it("refuses a registration whose report breaks the grammar, registering nothing", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const bad = [
      [{ engine: "terraform", version: "1.9.5<script>", source: "mirror" }],
      [{ engine: "ansible", version: "1.0.0", source: "mirror" }],
      [{ engine: "terraform", version: "1.9.5", source: "internet" }],
      [{ engine: "terraform", version: "1.9.5", source: "mirror", extra: 1 }],
      Array.from({ length: 201 }, (_, i) => ({
        engine: "terraform",
        version: `1.${i}.0`,
        source: "mirror",
      })),
    ];
    for (const report of bad) {
      const res = await requestJson<ErrorBody>("/agent/v1/register", {
        method: "POST",
        token: pool.token,
        body: { version: "0.1.0", os: "linux", arch: "amd64", engines: report },
      });
      expect(res.status, JSON.stringify(report).slice(0, 80)).toBe(400);
      expect(res.body.error.issues?.[0]?.path).toMatch(/^json\.engines/);
    }
    const detail = await requestJson<{ agents: unknown[] }>(`/api/v1/pools/${pool.poolId}`, {
      token: org.ownerToken,
    });
    expect(detail.body.agents).toEqual([]);
  });
});
