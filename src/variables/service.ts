/**
 * Variables: create-or-replace, read and delete, written once for every owner of variables (a
 * workspace's own, a variable set's: `store.ts`), and the one place sensitive values are
 * decrypted ({@link decryptVariables}). A sensitive value is stored only as AES-GCM ciphertext
 * under the `ENCRYPTION_KEY` keyring, bound to its row and its owner, and no function here but
 * that one ever returns it.
 */

import { newId, ok } from "@outpost/common";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import type { Deps } from "../deps.ts";
import { type Keyring, type KeyringError, loadKeyring, open, seal } from "../lib/encryption.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
import {
  type Category,
  MAX_VARIABLES_PER_WORKSPACE,
  planWrite,
  type StoredVariable,
  type VariableWrite,
  variableAad,
} from "./model.ts";
import { type VariableStore, workspaceVariables } from "./store.ts";

/** The public shape: a sensitive variable reads back with `value: null`, always. */
export function presentVariable(row: StoredVariable) {
  return {
    id: row.id,
    key: row.key,
    category: row.category,
    value: row.isSensitive ? null : (row.value ?? ""),
    hcl: row.isHcl,
    sensitive: row.isSensitive,
    description: row.description,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
export type Variable = ReturnType<typeof presentVariable>;

/**
 * A variable operation's outcome: `not_found`, `invalid` input (also a key in both categories
 * without `?category=`), `conflict` (the limit, a concurrent write), `unavailable` without a
 * usable `ENCRYPTION_KEY`.
 */
export type VariableResult<T> = Outcome<T, "not_found" | "invalid" | "conflict" | "unavailable">;

/** What is wrong with the deployment's `ENCRYPTION_KEY`, in words. */
function keyringProblem(problem: KeyringError): string {
  return `ENCRYPTION_KEY is ${problem === "missing" ? "not set" : `unusable (${problem})`}`;
}

/** The keyring, or the deployment's key problem as a bug to throw (a job must not run without). */
async function requireKeyring(secret: string | undefined, doing: string): Promise<Keyring> {
  const keyring = await loadKeyring(secret);
  if (!keyring.ok) {
    throw new Error(`${doing}: ${keyringProblem(keyring.reason)}`);
  }
  return keyring.value;
}

/** The keyring, or `unavailable` naming what is wrong with `ENCRYPTION_KEY`. */
export async function keyringOf(
  secret: string | undefined,
): Promise<Outcome<Keyring, "unavailable">> {
  const keyring = await loadKeyring(secret);
  if (!keyring.ok) {
    return refuse(
      "unavailable",
      `sensitive variables are unavailable: ${keyringProblem(keyring.reason)}`,
    );
  }
  return ok(keyring.value);
}

function variableNotFound(key: string) {
  return refuse("not_found", `variable ${key} not found`);
}

function changedConcurrently(key: string) {
  return refuse("conflict", `variable ${key} was changed concurrently; retry`);
}

/** The owner's variables by category and key, as the API shows them. */
export async function listStoredVariables(store: VariableStore): Promise<Variable[]> {
  return (await store.list()).map(presentVariable);
}

/** A workspace's own variables, as the API shows them. */
export function listVariables(db: Database, workspaceId: string): Promise<Variable[]> {
  return listStoredVariables(workspaceVariables(db, "", workspaceId));
}

/**
 * The owner's variable named `key`; with no category it must exist in exactly one, else
 * `invalid` (`?category=` is needed).
 */
export async function findStoredVariable(
  store: VariableStore,
  key: string,
  category?: Category,
): Promise<VariableResult<StoredVariable>> {
  const rows = await store.find(key, category);
  const [row, second] = rows;
  if (!row) {
    return variableNotFound(key);
  }
  if (second) {
    const categories = rows.map((r) => r.category).join(" and ");
    return invalidInput(
      "query.category",
      "required for this key",
      `${key} exists as ${categories} variables; add ?category=`,
    );
  }
  return ok(row);
}

/** {@link findStoredVariable} among a workspace's own variables. */
export function findVariable(
  db: Database,
  workspaceId: string,
  key: string,
  category?: Category,
): Promise<VariableResult<StoredVariable>> {
  return findStoredVariable(workspaceVariables(db, "", workspaceId), key, category);
}

/** A create-or-replace: the key, what to write, who writes it, and the deployment's keyring. */
export type PutInput = {
  key: string;
  write: VariableWrite;
  actor: AuditActor;
  encryptionKey: string | undefined;
};

type Stored = Pick<StoredVariable, "value" | "ciphertext" | "keyId">;

/** Where the value of a write ends up: kept as stored, sealed for the owner, or in plain text. */
async function storedValue(
  store: VariableStore,
  id: string,
  existing: StoredVariable | undefined,
  input: PutInput,
  plan: ReturnType<typeof planWrite> & { ok: true },
): Promise<Outcome<Stored, "unavailable">> {
  if (plan.plan.kind === "keep" && existing) {
    return ok({ value: existing.value, ciphertext: existing.ciphertext, keyId: existing.keyId });
  }
  const plaintext = plan.plan.kind === "new" ? plan.plan.value : (existing?.value ?? "");
  if (!input.write.sensitive) {
    return ok({ value: plaintext, ciphertext: null, keyId: null });
  }
  const keyring = await keyringOf(input.encryptionKey);
  if (!keyring.ok) {
    return keyring;
  }
  const sealed = await seal(keyring.value, plaintext, variableAad(store.ownerId, id));
  return ok({ value: null, ciphertext: sealed.sealed, keyId: sealed.keyId });
}

/**
 * Creates or replaces the owner's variable (category, key). Omitted flags take their defaults
 * (replace semantics); an omitted value keeps the stored one. Returns whether it was created.
 * The replace is compare-and-set, and the audit event is recorded only if this write landed.
 * `limitMessage` says whose limit a new variable would pass.
 */
export async function putStoredVariable(
  deps: Deps,
  store: VariableStore,
  input: PutInput & { limitMessage?: string },
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  const [existing] = await store.find(input.key, input.write.category);
  const decided = planWrite(existing, input.key, input.write);
  if (!decided.ok) {
    const field =
      decided.problem === "invalid_key"
        ? "param.key"
        : decided.problem === "hcl_env"
          ? "json.hcl"
          : "json.value";
    return invalidInput(field, decided.message, `invalid request: ${decided.message}`);
  }
  if (!existing && (await store.count()) >= MAX_VARIABLES_PER_WORKSPACE) {
    const limit = input.limitMessage ?? "this workspace has the maximum number of variables";
    return refuse("conflict", limit);
  }
  const id = existing?.id ?? newId("variable");
  const stored = await storedValue(store, id, existing, input, decided);
  if (!stored.ok) {
    return stored;
  }
  const now = Math.max(deps.now(), (existing?.updatedAt ?? 0) + 1);
  const audit = auditWhereQuery(
    deps.db,
    {
      orgId: store.orgId,
      actor: input.actor,
      action: existing ? "variable.update" : "variable.create",
      targetType: "variable",
      targetId: id,
      data: {
        ...store.auditData,
        key: input.key,
        category: input.write.category,
        sensitive: input.write.sensitive,
        hcl: input.write.hcl,
        valueChanged: decided.plan.kind === "new",
      },
      now,
    },
    store.landed(id, now),
  );
  const row = {
    id,
    key: input.key,
    category: input.write.category,
    createdAt: existing?.createdAt ?? now,
    ...stored.value,
    isHcl: input.write.hcl,
    isSensitive: input.write.sensitive,
    description: input.write.description,
    updatedAt: now,
  };
  try {
    const written = await store.write(existing, row, [audit]);
    if (!written) {
      // Another write replaced the variable since it was read; the client may retry.
      return changedConcurrently(input.key);
    }
    return ok({ variable: presentVariable(written), created: !existing });
  } catch (err) {
    const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
    if (/UNIQUE constraint failed/i.test(text)) {
      return changedConcurrently(input.key);
    }
    // The owner was deleted between the lookup and the write.
    if (/FOREIGN KEY constraint failed/i.test(text)) {
      return variableNotFound(input.key);
    }
    throw err;
  }
}

/** {@link putStoredVariable} for a workspace's own variable. */
export function putVariable(
  deps: Deps,
  input: PutInput & { orgId: string; workspaceId: string },
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  return putStoredVariable(
    deps,
    workspaceVariables(deps.db, input.orgId, input.workspaceId),
    input,
  );
}

/** Deletes the owner's variable; the category is needed only when the key exists in both. */
export async function deleteStoredVariable(
  deps: Deps,
  store: VariableStore,
  input: { key: string; category?: Category | undefined; actor: AuditActor },
): Promise<VariableResult<Variable>> {
  const found = await findStoredVariable(store, input.key, input.category);
  if (!found.ok) {
    return found;
  }
  const row = found.value;
  await store.remove(row.id, [
    auditQuery(deps.db, {
      orgId: store.orgId,
      actor: input.actor,
      action: "variable.delete",
      targetType: "variable",
      targetId: row.id,
      data: { ...store.auditData, key: row.key, category: row.category },
      now: deps.now(),
    }),
  ]);
  return ok(presentVariable(row));
}

/** {@link deleteStoredVariable} for a workspace's own variable. */
export function deleteVariable(
  deps: Deps,
  input: {
    orgId: string;
    workspaceId: string;
    key: string;
    category?: Category | undefined;
    actor: AuditActor;
  },
): Promise<VariableResult<Variable>> {
  const store = workspaceVariables(deps.db, input.orgId, input.workspaceId);
  return deleteStoredVariable(deps, store, input);
}

export type JobVariable = {
  key: string;
  value: string;
  category: Category;
  hcl: boolean;
  sensitive: boolean;
};

/** A stored variable with the id of its owner, whose id its sealed value is bound to. */
export type OwnedVariable = { ownerId: string; row: StoredVariable };

/**
 * The variables with their values, for a job payload: the only function that decrypts. Throws
 * when a sensitive value cannot be decrypted (its key was removed from `ENCRYPTION_KEY`, or the
 * row was tampered with or moved to another owner): a job must not run with a secret missing.
 */
export async function decryptVariables(
  env: { ENCRYPTION_KEY?: string },
  variables: readonly OwnedVariable[],
): Promise<JobVariable[]> {
  let keyring: Keyring | undefined;
  const out: JobVariable[] = [];
  for (const { ownerId, row } of variables) {
    let value = row.value ?? "";
    if (row.isSensitive) {
      keyring ??= await requireKeyring(env.ENCRYPTION_KEY, "cannot decrypt sensitive variables");
      const opened = await open(keyring, row.ciphertext ?? "", variableAad(ownerId, row.id));
      if (!opened.ok) {
        throw new Error(
          `sensitive variable ${row.category}/${row.key} cannot be decrypted (${opened.reason}, key ${row.keyId})`,
        );
      }
      value = opened.value;
    }
    out.push({
      key: row.key,
      value,
      category: row.category,
      hcl: row.isHcl,
      sensitive: row.isSensitive,
    });
  }
  return out;
}
