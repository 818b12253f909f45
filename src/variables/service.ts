/**
 * Variables: create-or-replace, read, delete, and the one place sensitive values are decrypted
 * ({@link loadVariablesForJob}). A sensitive value is stored only as AES-GCM ciphertext under the
 * `ENCRYPTION_KEY` keyring and no function here but that one ever returns it.
 */

import { newId } from "@outpost/common";
import { and, eq, sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { variables } from "../db/schema.ts";
import { type Keyring, loadKeyring, open, seal } from "../lib/encryption.ts";
import {
  type Category,
  MAX_VARIABLES_PER_WORKSPACE,
  planWrite,
  type VariableWrite,
  variableAad,
} from "./model.ts";
import {
  countVariables,
  deleteVariableQuery,
  findVariables,
  insertVariableQuery,
  listVariableRows,
  replaceVariableQuery,
  rowsSealedWithOtherKeys,
  syncOwnBackendQuery,
  type VariableRow,
} from "./queries.ts";

/** The public shape: a sensitive variable reads back with `value: null`, always. */
export function presentVariable(row: VariableRow) {
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

export function listVariables(db: Database, workspaceId: string): Promise<Variable[]> {
  return listVariableRows(db, workspaceId).then((rows) => rows.map(presentVariable));
}

/**
 * The variable named `key`; with no category it must exist in exactly one, else `ambiguous`.
 */
export async function findVariable(
  db: Database,
  workspaceId: string,
  key: string,
  category?: Category,
): Promise<VariableResult<VariableRow>> {
  const rows = await findVariables(db, workspaceId, key, category);
  const [row, second] = rows;
  if (!row) {
    return refuse({ reason: "not_found" });
  }
  if (second) {
    return refuse({ reason: "ambiguous", categories: rows.map((r) => r.category) });
  }
  return { ok: true, value: row };
}

type PutInput = {
  orgId: string;
  workspaceId: string;
  key: string;
  write: VariableWrite;
  actor: AuditActor;
  encryptionKey: string | undefined;
};

/**
 * Creates or replaces the variable (workspace, category, key). Omitted flags take their defaults
 * (replace semantics); an omitted value keeps the stored one. Returns whether it was created.
 */
export async function putVariable(
  db: Database,
  input: PutInput,
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  const [existing] = await findVariables(db, input.workspaceId, input.key, input.write.category);
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
  if (!existing && (await countVariables(db, input.workspaceId)) >= MAX_VARIABLES_PER_WORKSPACE) {
    return refuse({ reason: "too_many" });
  }
  const id = existing?.id ?? newId("variable");
  const plan = decided.plan;
  let stored: Pick<VariableRow, "value" | "ciphertext" | "keyId">;
  if (plan.kind === "keep" && existing) {
    stored = { value: existing.value, ciphertext: existing.ciphertext, keyId: existing.keyId };
  } else {
    const plaintext = plan.kind === "new" ? plan.value : (existing?.value ?? "");
    if (input.write.sensitive) {
      const keyring = await keyringOf(input.encryptionKey);
      if (!keyring.ok) {
        return keyring;
      }
      const sealed = await seal(keyring.value, plaintext, variableAad(input.workspaceId, id));
      stored = { value: null, ciphertext: sealed.sealed, keyId: sealed.keyId };
    } else {
      stored = { value: plaintext, ciphertext: null, keyId: null };
    }
  }
  const now = Math.max(Date.now(), (existing?.updatedAt ?? 0) + 1);
  const fields = {
    ...stored,
    isHcl: input.write.hcl,
    isSensitive: input.write.sensitive,
    description: input.write.description,
    updatedAt: now,
  };
  // Recorded only if this write is the one that landed (the replace is compare-and-set).
  const landed = db
    .select({ id: variables.id })
    .from(variables)
    .where(and(eq(variables.id, id), eq(variables.updatedAt, now)));
  const audit = auditWhereQuery(
    db,
    {
      orgId: input.orgId,
      actor: input.actor,
      action: existing ? "variable.update" : "variable.create",
      targetType: "variable",
      targetId: id,
      data: {
        workspaceId: input.workspaceId,
        key: input.key,
        category: input.write.category,
        sensitive: input.write.sensitive,
        hcl: input.write.hcl,
        valueChanged: plan.kind === "new",
      },
      now,
    },
    sql`EXISTS ${landed}`,
  );
  const sync = syncOwnBackendQuery(db, input.workspaceId);
  try {
    const [rows] = existing
      ? await db.batch([replaceVariableQuery(db, existing, fields), audit, sync])
      : await db.batch([
          insertVariableQuery(db, {
            id,
            orgId: input.orgId,
            workspaceId: input.workspaceId,
            key: input.key,
            category: input.write.category,
            createdAt: now,
            ...fields,
          }),
          audit,
          sync,
        ]);
    const row = rows[0];
    if (!row) {
      // Another write replaced the variable since it was read; the client may retry.
      return refuse({ reason: "conflict" });
    }
    return { ok: true, value: { variable: presentVariable(row), created: !existing } };
  } catch (err) {
    const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
    if (/UNIQUE constraint failed/i.test(text)) {
      return refuse({ reason: "conflict" });
    }
    // The workspace was deleted between the lookup and the write.
    if (/FOREIGN KEY constraint failed/i.test(text)) {
      return refuse({ reason: "not_found" });
    }
    throw err;
  }
}

/** Deletes the variable; the category is needed only when the key exists in both. */
export async function deleteVariable(
  db: Database,
  input: {
    orgId: string;
    workspaceId: string;
    key: string;
    category?: Category;
    actor: AuditActor;
  },
): Promise<VariableResult<Variable>> {
  const found = await findVariable(db, input.workspaceId, input.key, input.category);
  if (!found.ok) {
    return found;
  }
  const row = found.value;
  const now = Date.now();
  await db.batch([
    deleteVariableQuery(db, row.id),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "variable.delete",
      targetType: "variable",
      targetId: row.id,
      data: { workspaceId: input.workspaceId, key: row.key, category: row.category },
      now,
    }),
    syncOwnBackendQuery(db, input.workspaceId),
  ]);
  return { ok: true, value: presentVariable(row) };
}

export type JobVariable = {
  key: string;
  value: string;
  category: Category;
  hcl: boolean;
  sensitive: boolean;
};

/**
 * Every variable of the workspace with its value, for a job payload: the only function that
 * decrypts. Without `includeSensitive` (e.g. a fork pull request) sensitive variables are left
 * out entirely. Throws when a sensitive value cannot be decrypted (its key was removed from
 * `ENCRYPTION_KEY`, or the row was tampered with): a job must not run with a secret missing.
 */
export async function loadVariablesForJob(
  env: { ENCRYPTION_KEY?: string },
  db: Database,
  workspaceId: string,
  options: {
    includeSensitive: boolean;
    /** The workspace's rows when the caller already read them (in a batch of its own). */
    rows?: VariableRow[];
  },
): Promise<JobVariable[]> {
  const rows = options.rows ?? (await listVariableRows(db, workspaceId));
  const wanted = rows.filter((r) => options.includeSensitive || !r.isSensitive);
  let keyring: Keyring | undefined;
  const out: JobVariable[] = [];
  for (const row of wanted) {
    let value = row.value ?? "";
    if (row.isSensitive) {
      if (!keyring) {
        const loaded = await keyringOf(env.ENCRYPTION_KEY);
        if (!loaded.ok) {
          throw new Error(`cannot decrypt sensitive variables: ${describe(loaded)}`);
        }
        keyring = loaded.value;
      }
      const opened = await open(keyring, row.ciphertext ?? "", variableAad(workspaceId, row.id));
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
  let count = 0;
  for (const row of await rowsSealedWithOtherKeys(db, keyring.primaryId, limit)) {
    const aad = variableAad(row.workspaceId, row.id);
    const opened = await open(keyring, row.ciphertext ?? "", aad);
    if (!opened.ok) {
      continue;
    }
    const sealed = await seal(keyring, opened.value, aad);
    // Same updatedAt: a rotation is not a change of the variable, and loses to a concurrent write.
    const [done] = await replaceVariableQuery(db, row, {
      ciphertext: sealed.sealed,
      keyId: sealed.keyId,
    });
    count += done ? 1 : 0;
  }
  return count;
}
