/**
 * Each agent reports how it confines its jobs (`isolation` at registration); the pool keeps it
 * with the agent and the pools API and the dashboard's pool page show it. Pools created before
 * agents reported it gain the column on their next start.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { PoolStore } from "../../durable/pool-store.ts";
import { SCHEMA_VERSION } from "../../durable/schema.ts";
import { poolStub } from "../../src/pools/service.ts";
import { requestJson } from "./helpers/api.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { seedPool } from "./helpers/pools.ts";
import { signIn } from "./helpers/ui.ts";

let org: TestOrg;

beforeAll(async () => {
  org = await seedOrg();
});

function register(token: string, body: Record<string, unknown>) {
  return requestJson<{ agentId: string; error?: { code: string } }>("/agent/v1/register", {
    method: "POST",
    token,
    body: { version: "0.1.0", os: "linux", arch: "amd64", ...body },
  });
}

type PoolDetail = { agents: { id: string; name: string; isolation: string | null }[] };

describe("an agent's isolation mode", () => {
  it("is stored at registration and shown by the pools API and the pool page", async () => {
    const pool = await seedPool(org);
    const sandboxed = await register(pool.token, { name: "boxed", isolation: "bwrap" });
    const open = await register(pool.token, { name: "open", isolation: "none" });
    const old = await register(pool.token, { name: "old" });
    for (const answer of [sandboxed, open, old]) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    }

    const detail = await requestJson<PoolDetail>(`/api/v1/pools/${pool.poolId}`, {
      token: org.tokens.reader,
    });
    const byName = Object.fromEntries(detail.body.agents.map((a) => [a.name, a.isolation]));
    expect(byName).toEqual({ boxed: "bwrap", open: "none", old: null });

    const page = await (
      await (await signIn(org.tokens.reader)).get(`/ui/pools/${pool.poolId}`)
    ).text();
    expect(page).toContain('<th scope="col">Isolation</th>');
    expect(page).toMatch(/data-isolation="bwrap"[^>]*>\s*<span[^>]*>sandboxed \(bwrap\)/);
    expect(page).toMatch(/data-isolation="none"[^>]*>\s*<strong[^>]*>none</);
    expect(page).toMatch(/data-isolation="unknown"[^>]*>\s*<span class="muted">not reported/);
  });

  it("refuses a mode the coordinator does not know, registering nothing", async () => {
    const pool = await seedPool(org);
    const answer = await register(pool.token, { isolation: "chroot" });
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe("BAD_REQUEST");
    expect(await poolStub(env, pool.poolId).listAgents()).toEqual([]);
  });

  it("an object written before agents reported it gains the columns; its agents show null", async () => {
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    await register(pool.token, { name: "before", isolation: "bwrap" });
    // Turn the object's storage back into version 3's: no isolation, agent_lost or engines column.
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("ALTER TABLE agents DROP COLUMN isolation");
      sql.exec("ALTER TABLE agents DROP COLUMN engines");
      sql.exec("ALTER TABLE jobs DROP COLUMN agent_lost");
      sql.exec("UPDATE settings SET value = '3' WHERE key = 'schema_version'");
      new PoolStore(sql).migrate();
      const columns = (table: string) =>
        sql
          .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
          .toArray()
          .map((c) => c.name);
      const version = sql
        .exec<{ value: string }>("SELECT value FROM settings WHERE key = 'schema_version'")
        .one().value;
      expect(columns("agents")).toEqual(expect.arrayContaining(["isolation", "engines"]));
      expect(columns("jobs")).toContain("agent_lost");
      expect(version).toBe(String(SCHEMA_VERSION));
      // Migrating again changes nothing.
      new PoolStore(sql).migrate();
    });
    expect((await stub.listAgents()).map((a) => [a.name, a.isolation])).toEqual([["before", null]]);
    await register(pool.token, { name: "after", isolation: "none" });
    expect((await stub.listAgents()).map((a) => a.isolation)).toEqual([null, "none"]);
  });
});
