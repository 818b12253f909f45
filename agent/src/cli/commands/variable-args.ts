/**
 * The flags and body of `vars set`/`vars delete` and `varsets set`/`unset`: one variable of a
 * workspace or of a variable set is written the same way wherever it lives.
 */
import type { Values } from "../args.ts";
import type { CliContext } from "../context.ts";
import { UsageError } from "../errors.ts";

/** The flags of a `set` command. */
export const setVariableOptions = {
  category: {
    type: "string",
    description: "env or terraform (the default); --env is --category env",
  },
  env: { type: "boolean", description: "an environment variable (default: terraform)" },
  hcl: { type: "boolean", description: "the value is an HCL expression" },
  sensitive: { type: "boolean", description: "write-only, masked in logs" },
  description: { type: "string", description: "what it is for" },
} as const;

/** The flags of a `delete`/`unset` command. */
export const deleteVariableOptions = {
  category: { type: "string", description: "env or terraform, when both exist" },
} as const;

type Category = "env" | "terraform";

/** `--category` of a delete, checked; undefined when not given. */
export function categoryFlag(given: string | undefined): Category | undefined {
  if (given !== undefined && given !== "env" && given !== "terraform") {
    throw new UsageError("--category must be env or terraform");
  }
  return given;
}

/**
 * The request body of a `set`: the category from `--category`/`--env` (contradictions refused),
 * the value from the argument or, for `-`, from stdin (a secret on the command line lands in
 * shell history).
 */
export async function variableBody(
  ctx: CliContext,
  values: Values<typeof setVariableOptions>,
  given: string,
) {
  const category = categoryFlag(values.category) ?? (values.env ? "env" : "terraform");
  if (values.env && category === "terraform") {
    throw new UsageError("--env and --category terraform contradict each other; give one");
  }
  const value = given === "-" ? ((await ctx.readStdin()) ?? "").replace(/\r?\n$/, "") : given;
  return {
    value,
    category,
    hcl: values.hcl === true,
    sensitive: values.sensitive === true,
    ...(values.description === undefined ? {} : { description: values.description }),
  };
}

/** `deleteQuery(category)` spreads into a DELETE's params: the category only when given. */
export function deleteQuery(category: Category | undefined) {
  return category === undefined ? {} : { query: { category } };
}
