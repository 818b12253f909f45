/**
 * The resources a state holds, by address, as `terraform state list` prints them: pure, from
 * the parsed body of a Terraform/OpenTofu state (format 4) or a Pulumi checkpoint. The
 * coordinator lists them (`…/state-versions/{id}/resources`); the CLI finds one to show.
 */

/** One resource instance in a state: its address and what it is. */
export type StateResource = {
  /** `aws_instance.web`, `module.vpc.aws_subnet.a[0]`, `data.aws_ami.x`; a Pulumi URN. */
  address: string;
  mode: "managed" | "data";
  type: string;
  name: string;
  /** `module.vpc` for a resource in a module; null in the root module (and for Pulumi). */
  module: string | null;
  provider: string | null;
};

/** One instance with what the state holds about it (attribute values: never for the API). */
export type StateInstance = { resource: StateResource; object: Record<string, unknown> };

type TerraformResource = {
  module?: unknown;
  mode?: unknown;
  type?: unknown;
  name?: unknown;
  provider?: unknown;
  instances?: Record<string, unknown>[];
};
type PulumiResource = { urn?: unknown; type?: unknown; provider?: unknown };

const text = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** `[0]` or `["a"]` for an instance key, nothing for a single instance. */
function indexSuffix(key: unknown): string {
  if (typeof key === "number") {
    return `[${key}]`;
  }
  return typeof key === "string" ? `[${JSON.stringify(key)}]` : "";
}

function terraformInstances(resources: TerraformResource[]): StateInstance[] {
  const out: StateInstance[] = [];
  for (const r of resources) {
    const type = text(r.type);
    const name = text(r.name);
    if (type === null || name === null) {
      continue;
    }
    const mode = r.mode === "data" ? "data" : "managed";
    const module = text(r.module);
    const base = `${module ? `${module}.` : ""}${mode === "data" ? "data." : ""}${type}.${name}`;
    const instances = Array.isArray(r.instances) && r.instances.length > 0 ? r.instances : [{}];
    for (const instance of instances) {
      const resource = {
        address: `${base}${indexSuffix(instance.index_key)}`,
        mode,
        type,
        name,
        module,
        provider: text(r.provider),
      } as const;
      out.push({ resource, object: instance });
    }
  }
  return out;
}

function pulumiInstances(resources: PulumiResource[]): StateInstance[] {
  return resources.flatMap((r) => {
    const urn = text(r.urn);
    if (urn === null) {
      return [];
    }
    const resource = {
      address: urn,
      mode: "managed" as const,
      type: text(r.type) ?? "",
      name: urn.slice(urn.lastIndexOf("::") + 2),
      module: null,
      provider: text(r.provider),
    };
    return [{ resource, object: r as Record<string, unknown> }];
  });
}

/** The resource instances of a parsed state body with their objects, in the state's order. */
export function stateInstances(doc: unknown): StateInstance[] {
  if (typeof doc !== "object" || doc === null) {
    return [];
  }
  const state = doc as { resources?: unknown; checkpoint?: { latest?: { resources?: unknown } } };
  if (Array.isArray(state.resources)) {
    return terraformInstances(state.resources as TerraformResource[]);
  }
  const pulumi = state.checkpoint?.latest?.resources;
  return Array.isArray(pulumi) ? pulumiInstances(pulumi as PulumiResource[]) : [];
}

/** The resource instances of a parsed state body, in the state's order; [] when it has none. */
export function resourcesOf(doc: unknown): StateResource[] {
  return stateInstances(doc).map((i) => i.resource);
}
