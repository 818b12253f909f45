/**
 * Workspace variables, pure: name rules per category and what a create-or-replace may do to an
 * existing variable. A variable is identified by (workspace, category, key): `region` may exist
 * both as a terraform variable and as an env var.
 */

export const CATEGORIES = ["env", "terraform"] as const;
export type Category = (typeof CATEGORIES)[number];

/** Any name either category could accept; the category then narrows it. */
export const ANY_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;
const ENV_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
// HCL identifiers (ASCII): a letter or underscore, then letters, digits, underscores, dashes.
const TERRAFORM_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/;
// Names Terraform reserves for meta-arguments; a variable block may not use them.
const TERRAFORM_RESERVED = new Set([
  "source",
  "version",
  "providers",
  "count",
  "for_each",
  "lifecycle",
  "depends_on",
  "locals",
]);

export const MAX_KEY_LENGTH = 128;
export const MAX_VALUE_LENGTH = 128 * 1024;
export const MAX_VARIABLES_PER_WORKSPACE = 500;

/** Why `key` is not a valid name in `category`, or null when it is. */
export function keyProblem(category: Category, key: string): string | null {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    return `must be 1 to ${MAX_KEY_LENGTH} characters`;
  }
  if (category === "env") {
    return ENV_KEY_PATTERN.test(key)
      ? null
      : "an environment variable name is letters, digits and '_', not starting with a digit";
  }
  if (!TERRAFORM_KEY_PATTERN.test(key)) {
    return "a Terraform variable name is an identifier: letters, digits, '_' and '-', starting with a letter or '_'";
  }
  if (TERRAFORM_RESERVED.has(key)) {
    return `${key} is reserved by Terraform`;
  }
  return null;
}

export type VariableWrite = {
  category: Category;
  value?: string;
  hcl: boolean;
  sensitive: boolean;
  description: string;
};

export type StoredFlags = { isSensitive: boolean };

/** Where the value of a write comes from. */
export type ValuePlan =
  | { kind: "new"; value: string }
  /** Keep the stored value as it is (plaintext stays plaintext, ciphertext stays ciphertext). */
  | { kind: "keep" }
  /** Seal the stored plaintext: a plain variable becomes sensitive without a new value. */
  | { kind: "seal_existing" };

export type WriteProblem =
  | "value_required"
  | "sensitive_to_plain_needs_value"
  | "hcl_env"
  | "invalid_key";

/**
 * What a create-or-replace does with the value, or why it is refused: a new variable needs a
 * value; a sensitive variable can only become plain with a new value (its old value must never
 * become readable); HCL makes no sense for env vars.
 */
export function planWrite(
  existing: StoredFlags | undefined,
  key: string,
  write: VariableWrite,
): { ok: true; plan: ValuePlan } | { ok: false; problem: WriteProblem; message: string } {
  const badKey = keyProblem(write.category, key);
  if (badKey) {
    return { ok: false, problem: "invalid_key", message: badKey };
  }
  if (write.category === "env" && write.hcl) {
    return { ok: false, problem: "hcl_env", message: "hcl applies to terraform variables only" };
  }
  if (write.value !== undefined) {
    return { ok: true, plan: { kind: "new", value: write.value } };
  }
  if (!existing) {
    return { ok: false, problem: "value_required", message: "a new variable needs a value" };
  }
  if (existing.isSensitive && !write.sensitive) {
    return {
      ok: false,
      problem: "sensitive_to_plain_needs_value",
      message: "a sensitive variable becomes non-sensitive only with a new value",
    };
  }
  if (!existing.isSensitive && write.sensitive) {
    return { ok: true, plan: { kind: "seal_existing" } };
  }
  return { ok: true, plan: { kind: "keep" } };
}

/**
 * The associated data that binds a sealed value to its variable row and the row's owner (a
 * workspace, `ws_…`, or a variable set, `varset_…`): a ciphertext copied elsewhere never opens.
 */
export function variableAad(ownerId: string, variableId: string): string {
  return `outpost:variable:${ownerId}:${variableId}`;
}

/**
 * A stored variable, whoever owns it: a workspace's row and a variable set's have these columns
 * in common, and every rule here and in the service reads only these.
 */
export type StoredVariable = {
  id: string;
  key: string;
  category: Category;
  isHcl: boolean;
  isSensitive: boolean;
  value: string | null;
  ciphertext: string | null;
  keyId: string | null;
  description: string;
  createdAt: number;
  updatedAt: number;
};
