/**
 * The Durable Objects are a one-way adapter: they import the wire contract and pure helpers,
 * never run logic or D1, so they can never call back into the Worker. And the AgentPool keeps
 * its three roles apart: pure rules (`queue.ts`), all SQL in one store, a thin class.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const dir = path.join(root, "durable");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
const source = (file: string) => readFileSync(path.join(dir, file), "utf8");

/** Every module specifier a file imports or re-exports. */
function imports(text: string): string[] {
  return [...text.matchAll(/(?:import|export)\s[^;]*?from\s+"([^"]+)"/g)].map((m) => m[1] ?? "");
}

/** Outside `durable/`, the only modules an object may use: the platform, the protocol, pure helpers. */
const ALLOWED = new Set([
  "cloudflare:workers",
  "@outpost/protocol",
  "zod",
  "../src/lib/result.ts",
  "../src/db/ids.ts",
]);

describe("durable/", () => {
  it.each(files)("%s imports only the protocol, zod and pure helpers", (file) => {
    const outside = imports(source(file)).filter((m) => !m.startsWith("./"));
    expect(outside.filter((m) => !ALLOWED.has(m))).toEqual([]);
  });

  it("never touches D1 or the run service", () => {
    for (const file of files) {
      expect(source(file), file).not.toMatch(/\benv\.DB\b|D1Database|drizzle|src\/runs\//);
    }
  });

  it("keeps every AgentPool SQL statement in the store and the class under 300 lines", () => {
    const poolFiles = files.filter((f) => !["run-log.ts", "log-math.ts"].includes(f));
    const withSql = poolFiles.filter((f) => /\.exec(?:<[^>]*>)?\(/.test(source(f)));
    expect(withSql).toEqual(["pool-store.ts"]);
    expect(source("agent-pool.ts").split("\n").length).toBeLessThan(300);
    expect(imports(source("queue.ts")).filter((m) => m.startsWith("./"))).toEqual([]);
  });
});
