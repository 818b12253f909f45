/**
 * The `vars` resource both variable families share: a workspace's variables and a variable set's.
 * One attribute schema, one rendering (a sensitive value is already null in `Variable`), one
 * rule for how a PATCH's attributes combine with the stored variable.
 */
import { z } from "@hono/zod-openapi";
import { CATEGORIES, MAX_VALUE_LENGTH } from "../variables/model.ts";
import type { Variable } from "../variables/service.ts";

/** A `vars` document's attributes; every one optional (a PATCH names only what changes). */
export const VariableAttributes = z.object({
  key: z.string().min(1).max(128).optional(),
  value: z.string().max(MAX_VALUE_LENGTH).nullable().optional(),
  category: z.enum(CATEGORIES).optional(),
  hcl: z.boolean().optional(),
  sensitive: z.boolean().optional(),
  description: z.string().max(1000).nullable().optional(),
});
export type VariableAttributes = z.infer<typeof VariableAttributes>;

/** A `vars` create/update document, named `name` in the OpenAPI document. */
export function variableDocument(name: string) {
  return z
    .object({ data: z.object({ type: z.literal("vars"), attributes: VariableAttributes }) })
    .openapi(name);
}

/** The attributes of `variable` as Terraform Cloud names them. */
export function variableAttributes(variable: Variable) {
  return {
    key: variable.key,
    value: variable.value,
    category: variable.category,
    hcl: variable.hcl,
    sensitive: variable.sensitive,
    description: variable.description,
    "version-id": variable.updatedAt,
  };
}

/**
 * What to write for `category`: the attributes given over `base` (the stored variable on a
 * PATCH, null on a create); a value left out keeps the stored one.
 */
export function variableWrite(
  category: (typeof CATEGORIES)[number],
  attributes: VariableAttributes,
  base: Variable | null,
) {
  return {
    category,
    ...(attributes.value !== undefined ? { value: attributes.value ?? "" } : {}),
    hcl: attributes.hcl ?? base?.hcl ?? false,
    sensitive: attributes.sensitive ?? base?.sensitive ?? false,
    description: attributes.description ?? base?.description ?? "",
  };
}
