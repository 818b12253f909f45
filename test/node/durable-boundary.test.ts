/**
 * The leaves of the code stay leaves. The Durable Objects are a one-way adapter: `durable/`
 * imports only packages (the platform, `@outpost/protocol`, `@outpost/common`, zod), never a
 * path outside itself, so it can never call back into the Worker; the AgentPool keeps its three
 * roles apart: pure rules (`queue.ts`), every SQL statement in the store modules, a thin class.
 * The workspace packages import only what their package.json declares, and `src/lib/` imports
 * nothing from a feature or from the HTTP error layer (`src/errors.ts`).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/** Every `.ts`/`.tsx` file under `dir`, as paths relative to it. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f))
    .sort();
}

const read = (file: string) => readFileSync(file, "utf8");

/** Every module specifier a file imports or re-exports, statically or dynamically. */
function imports(text: string): string[] {
  const patterns = [
    /(?:import|export)\s[^;]*?from\s+"([^"]+)"/g,
    /\bimport\s+"([^"]+)"/g,
    /\bimport\(\s*"([^"]+)"\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1] ?? ""));
}

const isRelative = (specifier: string) => specifier.startsWith(".") || specifier.startsWith("/");

/** Where a relative specifier of `file` points, relative to the repository root. */
function target(file: string, specifier: string): string {
  return path.relative(root, path.resolve(path.dirname(file), specifier));
}

/** The npm package a bare specifier names (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

describe("durable/", () => {
  const dir = path.join(root, "durable");
  const files = sourcesUnder(dir);
  const source = (file: string) => read(path.join(dir, file));

  it.each(files)("%s imports only packages and modules of durable/", (file) => {
    const outside = imports(source(file)).filter(
      (m) => isRelative(m) && !target(path.join(dir, file), m).startsWith("durable/"),
    );
    expect(outside).toEqual([]);
  });

  it("never touches D1 or the run service", () => {
    for (const file of files) {
      expect(source(file), file).not.toMatch(/\benv\.DB\b|D1Database|drizzle|src\/runs\//);
    }
  });

  it("keeps every AgentPool SQL statement in the store modules and the class under 300 lines", () => {
    const poolFiles = files.filter((f) => !["run-log.ts", "log-math.ts"].includes(f));
    const withSql = poolFiles.filter((f) => /\.exec(?:<[^>]*>)?\(/.test(source(f)));
    const storeModules = poolFiles.filter((f) => /^pool-store(?:-[a-z]+)?\.ts$/.test(f));
    expect(storeModules).toEqual([
      "pool-store-agents.ts",
      "pool-store-figures.ts",
      "pool-store-jobs.ts",
      "pool-store-outbox.ts",
      "pool-store-settings.ts",
      "pool-store.ts",
    ]);
    expect(withSql).toEqual(storeModules);
    expect(source("agent-pool.ts").split("\n").length).toBeLessThan(300);
    expect(imports(source("queue.ts")).filter(isRelative)).toEqual([]);
  });

  it("has no file over 300 lines", () => {
    const long = files
      .map((file) => ({ file, lines: source(file).trimEnd().split("\n").length }))
      .filter(({ lines }) => lines > 300);
    expect(long).toEqual([]);
  });
});

describe("packages/", () => {
  const dir = path.join(root, "packages");
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  it.each(names)("%s imports only its own modules and its declared dependencies", (name) => {
    const pkgDir = path.join(dir, name);
    const manifest = JSON.parse(read(path.join(pkgDir, "package.json"))) as {
      dependencies?: Record<string, string>;
    };
    const declared = new Set(Object.keys(manifest.dependencies ?? {}));
    for (const file of sourcesUnder(pkgDir)) {
      const full = path.join(pkgDir, file);
      for (const specifier of imports(read(full))) {
        if (isRelative(specifier)) {
          expect(target(full, specifier), `${name}/${file}`).toMatch(
            new RegExp(`^packages/${name}/`),
          );
        } else {
          expect(declared, `${name}/${file} imports ${specifier}`).toContain(packageOf(specifier));
        }
      }
    }
  });

  it("holds the protocol (zod only) and the pure helpers (nothing at all)", () => {
    const dependencies = (name: string) =>
      Object.keys(
        (
          JSON.parse(read(path.join(dir, name, "package.json"))) as {
            dependencies?: Record<string, string>;
          }
        ).dependencies ?? {},
      );
    expect(dependencies("protocol")).toEqual(["zod"]);
    expect(dependencies("common")).toEqual([]);
  });
});

describe("src/lib/", () => {
  const dir = path.join(root, "src/lib");

  it.each(sourcesUnder(dir))("%s imports no feature and not src/errors.ts", (file) => {
    const full = path.join(dir, file);
    const forbidden = imports(read(full))
      .filter(isRelative)
      .map((m) => target(full, m))
      .filter((t) => t === "src/errors.ts" || /^src\/(?!lib\/)[^/]+\//.test(t));
    expect(forbidden).toEqual([]);
  });
});
