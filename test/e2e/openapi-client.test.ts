/**
 * The OpenAPI document is good enough to build a client from: openapi-typescript generates
 * types from the document the real coordinator serves, a small program typed by them (with
 * openapi-fetch and the document's operationIds) typechecks and then calls three routes; a
 * program that misuses a route must fail to typecheck, so the types are not `any` throughout.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useWorld } from "./helpers/world.ts";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");
// openapi-typescript is the agent package's (it generates the CLI's own types).
const fromAgent = createRequire(path.join(ROOT, "agent/package.json"));
type OpenapiTypescript = {
  default(document: unknown): Promise<unknown>;
  astToString(ast: unknown): string;
};
const openapiTypescript: OpenapiTypescript = await import(
  pathToFileURL(fromAgent.resolve("openapi-typescript")).href
);

const CLIENT = `import createClient from "openapi-fetch";
import type { operations, paths } from "./api.ts";

type Pool = operations["getPool"]["responses"][200]["content"]["application/json"];

const [baseUrl, token] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });

const health = await client.GET("/healthz");
const created = await client.POST("/api/v1/pools", { body: { name: "typed-client" } });
if (!created.data) {
  throw new Error(\`create answered \${created.response.status}\`);
}
const read = await client.GET("/api/v1/pools/{poolId}", {
  params: { path: { poolId: created.data.id } },
});
const pool: Pool | undefined = read.data;
const missing = await client.GET("/api/v1/workspaces/{workspaceId}", {
  params: { path: { workspaceId: "ws_${"a".repeat(26)}" } },
});
console.log(
  JSON.stringify({
    version: health.data?.version,
    poolId: created.data.id,
    name: pool?.name,
    missingCode: missing.error?.error.code,
  }),
);
`;

// A path parameter that is not there and a body field the route does not take.
const MISUSE = `import createClient from "openapi-fetch";
import type { paths } from "./api.ts";

const client = createClient<paths>({ baseUrl: "http://127.0.0.1:1" });
await client.GET("/api/v1/pools/{poolId}", { params: { path: { pool: "x" } } });
await client.POST("/api/v1/pools", { body: { nmae: "typo" } });
`;

const TSCONFIG = {
  compilerOptions: {
    target: "es2023",
    module: "nodenext",
    moduleResolution: "nodenext",
    lib: ["es2023", "dom"],
    types: ["node"],
    strict: true,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
  },
};

const world = useWorld();
let dir: string;

beforeAll(async () => {
  // Inside the repository, so `openapi-fetch` resolves from its node_modules.
  await mkdir(path.join(ROOT, "test-results"), { recursive: true });
  dir = await mkdtemp(path.join(ROOT, "test-results", "openapi-client-"));
});
afterAll(async () => {
  if (dir) {
    await rm(dir, { recursive: true, force: true });
  }
});

async function typecheck(file: string): Promise<{ ok: boolean; output: string }> {
  const project = path.join(dir, `tsconfig.${path.basename(file, ".ts")}.json`);
  await writeFile(project, JSON.stringify({ ...TSCONFIG, files: [file, "api.ts"] }));
  try {
    const { stdout } = await run(process.execPath, [TSC, "-p", project], { cwd: dir });
    return { ok: true, output: stdout };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

describe("a client generated from /api/v1/openapi.json", () => {
  it("typechecks, refuses misuse at compile time, and calls three routes", async () => {
    const res = await fetch(`${world.coordinator.url}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const ast = await openapiTypescript.default(await res.json());
    await writeFile(path.join(dir, "api.ts"), openapiTypescript.astToString(ast));
    await writeFile(path.join(dir, "client.ts"), CLIENT);
    await writeFile(path.join(dir, "misuse.ts"), MISUSE);

    const good = await typecheck("client.ts");
    expect(good.output).toBe("");
    expect(good.ok).toBe(true);
    const bad = await typecheck("misuse.ts");
    expect(bad.ok).toBe(false);
    expect(bad.output).toMatch(/misuse\.ts\(5,.*pool/);
    expect(bad.output).toMatch(/misuse\.ts\(6,.*nmae/);

    const { stdout } = await run(
      process.execPath,
      [path.join(dir, "client.ts"), world.coordinator.url, world.ownerToken],
      { cwd: dir },
    );
    const answer = JSON.parse(stdout) as Record<string, unknown>;
    expect(answer).toMatchObject({
      version: expect.any(String),
      poolId: expect.stringMatching(/^pool_/),
      name: "typed-client",
      missingCode: "NOT_FOUND",
    });
  });
});
