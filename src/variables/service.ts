/**
 * Variables: create-or-replace, read and delete, written once for every owner of variables (a
 * workspace's own, a variable set's: `store.ts`), and the one place sensitive values are
 * decrypted ({@link decryptVariables}). A sensitive value is stored only as AES-GCM ciphertext
 * under the `ENCRYPTION_KEY` keyring, bound to its row and owner, and no function here but that
 * one ever returns it.
 */

import { newId } from "@outpost/common";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { type Keyring, loadKeyring, open, seal } from "../lib/encryption.ts";
import { setSealedRows } from "../varsets/queries.ts";
import {
  type Category,
  MAX_VARIABLES_PER_WORKSPACE,
  planWrite,
  type StoredVariable,
  type VariableWrite,
  variableAad,
} from "./model.ts";
import { replaceVariableQuery, rowsSealedWithOtherKeys, type VariableRow } from "./queries.ts";
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

export type VariableFailure =
  | { reason: "not_found" }
  | { reason: "ambiguous"; categories: Category[] }
  | { reason: "invalid"; field: string; message: string }
  | { reason: "too_many" }
  | { reason: "conflict" }
  | { reason: "no_encryption_key"; message: string };

type VariableResult<T> = { ok: true; value: T } | ({ ok: false } & VariableFailure);
const refuse = (f: VariableFailure): { ok: false } & VariableFailure => ({ ok: false, ...f });

async function keyringOf(secret: string | undefined): Promise<VariableResult<Keyring>> {
  const keyring = await loadKeyring(secret);
  if (!keyring.ok) {
    return refuse({
      reason: "no_encryption_key",
      message: `ENCRYPTION_KEY is ${keyring.reason === "missing" ? "not set" : `unusable (${keyring.reason})`}`,
    });
  }
  return { ok: true, value: keyring.value };
}

function describe(failure: VariableFailure): string {
  return failure.reason === "no_encryption_key" ? failure.message : failure.reason;
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
 * `ambiguous`.
 */
export async function findStoredVariable(
  store: VariableStore,
  key: string,
  category?: Category,
): Promise<VariableResult<StoredVariable>> {
  const rows = await store.find(key, category);
  const [row, second] = rows;
  if (!row) {
    return refuse({ reason: "not_found" });
  }
  if (second) {
    return refuse({ reason: "ambiguous", categories: rows.map((r) => r.category) });
  }
  return { ok: true, value: row };
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

/** Where the value of a write ends up: kept as stored, or sealed, or in plain text. */
async function storedValue(
  store: VariableStore,
  id: string,
  existing: StoredVariable | undefined,
  input: PutInput,
  plan: ReturnType<typeof planWrite> & { ok: true },
): Promise<VariableResult<Pick<StoredVariable, "value" | "ciphertext" | "keyId">>> {
  if (plan.plan.kind === "keep" && existing) {
    const { value, ciphertext, keyId } = existing;
    return { ok: true, value: { value, ciphertext, keyId } };
  }
  const plaintext = plan.plan.kind === "new" ? plan.plan.value : (existing?.value ?? "");
  if (!input.write.sensitive) {
    return { ok: true, value: { value: plaintext, ciphertext: null, keyId: null } };
  }
  const keyring = await keyringOf(input.encryptionKey);
  if (!keyring.ok) {
    return keyring;
  }
  const sealed = await seal(keyring.value, plaintext, variableAad(store.ownerId, id));
  return { ok: true, value: { value: null, ciphertext: sealed.sealed, keyId: sealed.keyId } };
}

/**
 * Creates or replaces the owner's variable (category, key). Omitted flags take their defaults
 * (replace semantics); an omitted value keeps the stored one. Returns whether it was created.
 * The replace is compare-and-set, and the audit event is recorded only if this write landed.
 */
export async function putStoredVariable(
  store: VariableStore,
  db: Database,
  input: PutInput,
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
    return refuse({ reason: "invalid", field, message: decided.message });
  }
  if (!existing && (await store.count()) >= MAX_VARIABLES_PER_WORKSPACE) {
    return refuse({ reason: "too_many" });
  }
  const id = existing?.id ?? newId("variable");
  const stored = await storedValue(store, id, existing, input, decided);
  if (!stored.ok) {
    return stored;
  }
  const now = Math.max(Date.now(), (existing?.updatedAt ?? 0) + 1);
  const audit = auditWhereQuery(
    db,
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
      return refuse({ reason: "conflict" });
    }
    return { ok: true, value: { variable: presentVariable(written), created: !existing } };
  } catch (err) {
    const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
    if (/UNIQUE constraint failed/i.test(text)) {
      return refuse({ reason: "conflict" });
    }
    // The owner was deleted between the lookup and the write.
    if (/FOREIGN KEY constraint failed/i.test(text)) {
      return refuse({ reason: "not_found" });
    }
    throw err;
  }
}

/** {@link putStoredVariable} for a workspace's own variable. */
export function putVariable(
  db: Database,
  input: PutInput & { orgId: string; workspaceId: string },
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  return putStoredVariable(workspaceVariables(db, input.orgId, input.workspaceId), db, input);
}

/** Deletes the owner's variable; the category is needed only when the key exists in both. */
export async function deleteStoredVariable(
  store: VariableStore,
  db: Database,
  input: { key: string; category?: Category; actor: AuditActor },
): Promise<VariableResult<Variable>> {
  const found = await findStoredVariable(store, input.key, input.category);
  if (!found.ok) {
    return found;
  }
  const row = found.value;
  await store.remove(row.id, [
    auditQuery(db, {
      orgId: store.orgId,
      actor: input.actor,
      action: "variable.delete",
      targetType: "variable",
      targetId: row.id,
      data: { ...store.auditData, key: row.key, category: row.category },
      now: Date.now(),
    }),
  ]);
  return { ok: true, value: presentVariable(row) };
}

/** {@link deleteStoredVariable} for a workspace's own variable. */
export function deleteVariable(
  db: Database,
  input: {
    orgId: string;
    workspaceId: string;
    key: string;
    category?: Category;
    actor: AuditActor;
  },
): Promise<VariableResult<Variable>> {
  return deleteStoredVariable(workspaceVariables(db, input.orgId, input.workspaceId), db, input);
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
      if (!keyring) {
        const loaded = await keyringOf(env.ENCRYPTION_KEY);
        if (!loaded.ok) {
          throw new Error(`cannot decrypt sensitive variables: ${describe(loaded)}`);
        }
        keyring = loaded.value;
      }
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

/**
 * Re-encrypts up to `limit` sensitive values sealed with a key other than the primary one, so an
 * old key can be dropped from `ENCRYPTION_KEY`. Returns how many were re-sealed; run until 0.
 * Workspaces' variables and variable sets' alike.
 */
export async function reencryptVariables(
  env: { ENCRYPTION_KEY?: string },
  db: Database,
  limit = 100,
): Promise<number> {
  const loaded = await keyringOf(env.ENCRYPTION_KEY);
  if (!loaded.ok) {
    throw new Error(`cannot rotate: ${describe(loaded)}`);
  }
  const keyring = loaded.value;
  const sources: SealedRows[] = [workspaceSealedRows(db), setSealedRows(db)];
  let count = 0;
  for (const source of sources) {
    for (const { ownerId, row } of await source.read(keyring.primaryId, limit - count)) {
      const aad = variableAad(ownerId, row.id);
      const opened = await open(keyring, row.ciphertext ?? "", aad);
      if (!opened.ok) {
        continue;
      }
      const sealed = await seal(keyring, opened.value, aad);
      count += (await source.reseal(row, sealed.sealed, sealed.keyId)) ? 1 : 0;
    }
    if (count >= limit) {
      break;
    }
  }
  return count;
}

/** One owner kind's sensitive rows sealed with another key than the primary, for rotation. */
export type SealedRows = {
  read(primaryId: string, limit: number): Promise<OwnedVariable[]>;
  /** Stores the new ciphertext unless the row changed since it was read. */
  reseal(row: StoredVariable, ciphertext: string, keyId: string): Promise<boolean>;
};

function workspaceSealedRows(db: Database): SealedRows {
  return {
    async read(primaryId, limit) {
      const rows: VariableRow[] = await rowsSealedWithOtherKeys(db, primaryId, limit);
      return rows.map((row) => ({ ownerId: row.workspaceId, row }));
    },
    async reseal(row, ciphertext, keyId) {
      // Same updatedAt: a rotation is not a change of the variable, and loses to a concurrent write.
      const [done] = await replaceVariableQuery(db, row, { ciphertext, keyId });
      return done !== undefined;
    },
  };
}
