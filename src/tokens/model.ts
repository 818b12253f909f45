/**
 * Tokens and roles, pure. A token is `op_<kind>_<43 base64url chars>` (32 random bytes); only its
 * SHA-256 is ever stored.
 */
import { randomBase64Url, sha256Hex } from "../lib/crypto.ts";

export const ROLES = ["owner", "admin", "member", "reader"] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { reader: 0, member: 1, admin: 2, owner: 3 };

/** True when `role` may do what `required` may do (owner ⊇ admin ⊇ member ⊇ reader). */
export function roleAtLeast(role: Role, required: Role): boolean {
  return RANK[role] >= RANK[required];
}

/** `user`: a person's own API token; `team`: a team's token for CI (docs/people.md). */
export const TOKEN_KINDS = ["org", "agent", "run", "user", "team"] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

const SECRET_BYTES = 32;
const TOKEN_PATTERN = /^op_(org|agent|run|user|team)_[A-Za-z0-9_-]{43}$/;

/** A fresh token secret of the given kind. */
export function generateToken(kind: TokenKind): string {
  return `op_${kind}_${randomBase64Url(SECRET_BYTES)}`;
}

/** The kind of a well-formed token, or null when the string is not one of ours. */
export function tokenKind(token: string): TokenKind | null {
  const match = TOKEN_PATTERN.exec(token);
  return match ? (match[1] as TokenKind) : null;
}

/** What is stored in place of the secret. */
export function hashToken(token: string): Promise<string> {
  return sha256Hex(token);
}

/** `last_used_at` is written at most this often per token. */
export const LAST_USED_RESOLUTION_MS = 60_000;
