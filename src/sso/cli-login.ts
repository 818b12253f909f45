/**
 * `outpost login --sso`, device-style: the CLI starts a login and prints the address of its user
 * code; the person opens it in a browser, signs in (SSO, Access) and approves; the CLI's next
 * poll with its device code receives a personal token made then, once. Codes expire after ten
 * minutes; the device code is kept only as its SHA-256.
 */

import { newId, ok } from "@outpost/common";
import { and, eq, gt, isNotNull, isNull, lt } from "drizzle-orm";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { cliLogins } from "../db/schema.ts";
import { sha256Hex } from "../lib/crypto.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { getUser } from "../users/queries.ts";
import { createUserToken } from "../users/tokens.ts";
import { randomToken } from "./model.ts";

export const CLI_LOGIN_TTL_MS = 10 * 60_000;
export const CLI_POLL_INTERVAL_SECONDS = 2;
/** Personal tokens a CLI login makes live this long (a year); revoke them any time. */
const CLI_TOKEN_SECONDS = 365 * 86_400;
// No 0/O, 1/I/L: a code read aloud or retyped survives.
const USER_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

function userCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  const chars = [...bytes].map((b) => USER_CODE_ALPHABET[b % USER_CODE_ALPHABET.length]);
  return `${chars.slice(0, 4).join("")}-${chars.slice(4).join("")}`;
}

/** Starts a CLI login: the device code (the CLI's secret) and the user code to approve. */
export async function startCliLogin(db: Database, input: { clientName: string; now: number }) {
  const deviceCode = randomToken();
  const code = userCode();
  const expiresAt = input.now + CLI_LOGIN_TTL_MS;
  await db.batch([
    db.insert(cliLogins).values({
      id: newId("cliLogin"),
      deviceCodeHash: await sha256Hex(deviceCode),
      userCode: code,
      clientName: input.clientName,
      createdAt: input.now,
      expiresAt,
    }),
    db.delete(cliLogins).where(lt(cliLogins.expiresAt, input.now)),
  ]);
  return { deviceCode, userCode: code, expiresAt };
}

/** A pending login by its user code (for the approval page), or undefined. */
export function pendingCliLogin(db: Database, code: string, now: number) {
  return db.query.cliLogins.findFirst({
    where: and(
      eq(cliLogins.userCode, code),
      isNull(cliLogins.approvedAt),
      gt(cliLogins.expiresAt, now),
    ),
  });
}

/** The person approves the login: its next poll gets a token of theirs. */
export async function approveCliLogin(
  db: Database,
  input: { code: string; orgId: string; userId: string; now: number },
): Promise<Outcome<null, "not_found">> {
  const rows = await db
    .update(cliLogins)
    .set({ orgId: input.orgId, userId: input.userId, approvedAt: input.now })
    .where(
      and(
        eq(cliLogins.userCode, input.code),
        isNull(cliLogins.approvedAt),
        gt(cliLogins.expiresAt, input.now),
      ),
    )
    .returning({ id: cliLogins.id });
  return rows.length === 1
    ? ok(null)
    : refuse("not_found", "this CLI login is unknown, expired or already approved");
}

export type CliPoll =
  | { status: "pending" }
  | { status: "approved"; token: string; tokenId: string; userId: string };

/**
 * The CLI's poll: pending until approved, then a fresh personal token, once (the login is
 * consumed in the same statement that finds it approved). Unknown, expired and consumed device
 * codes are refused alike.
 */
export async function pollCliLogin(
  db: Database,
  input: { deviceCode: string; now: number },
): Promise<Outcome<CliPoll, "not_found">> {
  const hash = await sha256Hex(input.deviceCode);
  const [taken] = await db
    .update(cliLogins)
    .set({ consumedAt: input.now })
    .where(
      and(
        eq(cliLogins.deviceCodeHash, hash),
        isNotNull(cliLogins.approvedAt),
        isNull(cliLogins.consumedAt),
        gt(cliLogins.expiresAt, input.now),
      ),
    )
    .returning();
  if (taken?.orgId && taken.userId) {
    const user = await getUser(db, taken.orgId, taken.userId);
    const name = user ? user.name || user.email : taken.userId;
    // The person approved in a signed-in browser; the token is theirs.
    const actor: AuditActor = { type: "user", id: taken.userId, name, via: "sso" };
    const created = await createUserToken(db, {
      orgId: taken.orgId,
      userId: taken.userId,
      description: `outpost CLI on ${taken.clientName}`,
      expiresInSeconds: CLI_TOKEN_SECONDS,
      actor,
      now: input.now,
    });
    return ok({
      status: "approved",
      token: created.token,
      tokenId: created.id,
      userId: taken.userId,
    });
  }
  const pending = await db.query.cliLogins.findFirst({
    where: and(
      eq(cliLogins.deviceCodeHash, hash),
      isNull(cliLogins.approvedAt),
      gt(cliLogins.expiresAt, input.now),
    ),
    columns: { id: true },
  });
  return pending
    ? ok({ status: "pending" })
    : refuse("not_found", "this login is unknown, expired or already used; start again");
}
