/**
 * Variables: create-or-replace, read, delete, and the one place sensitive values are decrypted
 * ({@link loadVariablesForJob}). A sensitive value is stored only as AES-GCM ciphertext under the
 * `ENCRYPTION_KEY` keyring and no function here but that one ever returns it.
 */

import { newId, ok } from "@outpost/common";
import { and, eq, sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { variables } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Keyring, type KeyringError, loadKeyring, open, seal } from "../lib/encryption.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
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

/**
 * A variable operation's outcome: `not_found`, `invalid` input (also a key in both categories
 * without `?category=`), `conflict` (the limit, a concurrent write), `unavailable` without a
 * usable `ENCRYPTION_KEY`.
 */
type VariableResult<T> = Outcome<T, "not_found" | "invalid" | "conflict" | "unavailable">;

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

export function listVariables(db: Database, workspaceId: string): Promise<Variable[]> {
  return listVariableRows(db, workspaceId).then((rows) => rows.map(presentVariable));
}

/**
 * The variable named `key`; with no category it must exist in exactly one, else `invalid`
 * (`?category=` is needed).
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
  deps: Deps,
  input: PutInput,
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  const { db } = deps;
  const [existing] = await findVariables(db, input.workspaceId, input.key, input.write.category);
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
  if (!existing && (await countVariables(db, input.workspaceId)) >= MAX_VARIABLES_PER_WORKSPACE) {
    return refuse("conflict", "this workspace has the maximum number of variables");
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
  const now = Math.max(deps.now(), (existing?.updatedAt ?? 0) + 1);
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
  try {
    const [rows] = existing
      ? await db.batch([replaceVariableQuery(db, existing, fields), audit])
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
        ]);
    const row = rows[0];
    if (!row) {
      // Another write replaced the variable since it was read; the client may retry.
      return changedConcurrently(input.key);
    }
    return ok({ variable: presentVariable(row), created: !existing });
  } catch (err) {
    const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
    if (/UNIQUE constraint failed/i.test(text)) {
      return changedConcurrently(input.key);
    }
    // The workspace was deleted between the lookup and the write.
    if (/FOREIGN KEY constraint failed/i.test(text)) {
      return variableNotFound(input.key);
    }
    throw err;
  }
}

/** Deletes the variable; the category is needed only when the key exists in both. */
export async function deleteVariable(
  deps: Deps,
  input: {
    orgId: string;
    workspaceId: string;
    key: string;
    category?: Category;
    actor: AuditActor;
  },
): Promise<VariableResult<Variable>> {
  const { db } = deps;
  const found = await findVariable(db, input.workspaceId, input.key, input.category);
  if (!found.ok) {
    return found;
  }
  const row = found.value;
  const now = deps.now();
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
  ]);
  return ok(presentVariable(row));
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
      keyring ??= await requireKeyring(env.ENCRYPTION_KEY, "cannot decrypt sensitive variables");
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
