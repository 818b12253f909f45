import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Ajv, type ErrorObject } from "ajv";
import { parse, parseAllDocuments } from "yaml";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** One rendered Kubernetes object. */
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [key: string]: unknown };
  [key: string]: unknown;
};

/** The objects `kubectl kustomize dir` renders (kubectl's built-in kustomize). */
export function kustomize(dir: string): KubeObject[] {
  const result = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) {
    throw new Error(`kubectl kustomize ${dir} failed: ${result.stderr || result.error}`);
  }
  return parseAllDocuments(result.stdout).map((doc) => doc.toJS() as KubeObject);
}

/** Where kubernetes-models keeps an object's model: `apps/v1/Deployment`, `v1/ConfigMap`. */
export function modelPath(object: KubeObject): string {
  return `${object.apiVersion}/${object.kind}`;
}

/**
 * Validates a core object with its kubernetes-models class (types, required fields, formats,
 * enums from the Kubernetes OpenAPI document). Resolves with the error text, or null.
 */
export async function validateWithModel(object: KubeObject): Promise<string | null> {
  const specifier = `kubernetes-models/${modelPath(object)}`;
  const module = (await import(/* @vite-ignore */ specifier)) as Record<
    string,
    new (
      data: unknown,
    ) => { validate(): void }
  >;
  const Model = module[object.kind];
  if (Model === undefined) {
    return `kubernetes-models has no ${object.kind} in ${object.apiVersion}`;
  }
  try {
    new Model(object).validate();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * Type-checks objects against kubernetes-models' TypeScript interfaces with `tsc`: an object
 * literal's excess property check finds unknown fields (a misspelled `readinesProbe`), which
 * the API server refuses under kubectl's strict field validation and the models' runtime
 * validation lets through. Returns tsc's diagnostics, empty when every object is clean.
 */
export function typeCheckWithModels(objects: readonly KubeObject[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-k8s-types-"));
  try {
    const lines = objects.flatMap((object, i) => [
      `import type { I${object.kind} as T${i} } from "kubernetes-models/${modelPath(object)}";`,
      `export const o${i}: T${i} = ${JSON.stringify(object)};`,
    ]);
    writeFileSync(path.join(dir, "objects.ts"), `${lines.join("\n")}\n`);
    const models = path.join(ROOT, "node_modules/kubernetes-models");
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          skipLibCheck: true,
          types: [],
          paths: { "kubernetes-models/*": [`${models}/*`] },
        },
        files: ["objects.ts"],
      }),
    );
    const tsc = spawnSync(
      path.join(ROOT, "node_modules/.bin/tsc"),
      ["-p", path.join(dir, "tsconfig.json")],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    if (tsc.error) {
      throw tsc.error;
    }
    return tsc.status === 0 ? "" : `${tsc.stdout}${tsc.stderr}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Schema = Record<string, unknown>;

/** A CRD's validator: the errors for one object (empty when it is valid), and its CEL rules. */
export type CrdValidator = {
  kind: string;
  validate(object: unknown): string[];
  /** The `x-kubernetes-validations` rules (CEL), which a JSON-schema validator cannot run. */
  celRules: string[];
};

/**
 * Compiles the `openAPIV3Schema` of a CRD file (one YAML document after its header comment)
 * with ajv, as the API server applies a structural schema: a field the schema does not name
 * is an error (kubectl's default strict field validation) unless the schema preserves unknown
 * fields; `x-kubernetes-int-or-string` takes an integer or a string.
 */
export function crdValidator(file: string, version: string): CrdValidator {
  const crd = parse(readFileSync(file, "utf8")) as {
    spec: {
      names: { kind: string };
      versions: Array<{ name: string; schema: { openAPIV3Schema: Schema } }>;
    };
  };
  const served = crd.spec.versions.find((v) => v.name === version);
  if (!served) {
    throw new Error(`${file} has no version ${version}`);
  }
  const celRules: string[] = [];
  const schema = structural(served.schema.openAPIV3Schema, celRules) as Schema;
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat("int32", {
    type: "number",
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addFormat("date-time", {
    type: "string",
    validate: (s: string) => !Number.isNaN(Date.parse(s)),
  });
  const check = ajv.compile(schema);
  return {
    kind: crd.spec.names.kind,
    celRules,
    validate(object) {
      return check(object) ? [] : (check.errors ?? []).map(describe);
    },
  };
}

function describe(error: ErrorObject): string {
  const extra =
    error.keyword === "additionalProperties"
      ? ` (${String((error.params as { additionalProperty?: unknown }).additionalProperty)})`
      : "";
  return `${error.instancePath || "/"} ${error.message ?? error.keyword}${extra}`;
}

/** A copy of `node` with the API server's rules made explicit for ajv; collects CEL rules. */
function structural(node: unknown, celRules: string[]): unknown {
  if (Array.isArray(node)) {
    return node.map((item) => structural(item, celRules));
  }
  if (node === null || typeof node !== "object") {
    return node;
  }
  const source = node as Schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === "x-kubernetes-validations" && Array.isArray(value)) {
      celRules.push(...value.map((rule) => String((rule as { rule?: unknown }).rule)));
      continue;
    }
    // Values of these are data, not schemas: a property may be named like a keyword.
    out[key] =
      key === "properties" && value && typeof value === "object"
        ? Object.fromEntries(
            Object.entries(value as Schema).map(([name, sub]) => [name, structural(sub, celRules)]),
          )
        : key === "enum" || key === "required" || key === "default" || key === "example"
          ? value
          : structural(value, celRules);
  }
  if (
    out.properties !== undefined &&
    out.additionalProperties === undefined &&
    out["x-kubernetes-preserve-unknown-fields"] !== true
  ) {
    out.additionalProperties = false;
  }
  if (
    out["x-kubernetes-int-or-string"] === true &&
    out.type === undefined &&
    out.anyOf === undefined
  ) {
    out.anyOf = [{ type: "integer" }, { type: "string" }];
  }
  if (out.nullable === true) {
    return { anyOf: [out, { type: "null" }] };
  }
  return out;
}
