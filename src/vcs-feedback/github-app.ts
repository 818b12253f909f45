/**
 * GitHub App credentials in coordinator mode: the app's private key (GitHub hands out PKCS#1
 * "RSA PRIVATE KEY" PEM files; PKCS#8 is accepted too) signs a short app JWT with `jose`, which
 * finds the repository's installation and mints an installation token scoped to that one
 * repository. The token is cached sealed in D1 until shortly before it expires (see
 * `vcsAppTokens` in the schema for why D1 and not the isolate).
 */

import { and, eq } from "drizzle-orm";
import { importPKCS8, SignJWT } from "jose";
import type { Database } from "../db/client.ts";
import { vcsAppTokens } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { loadKeyring, open, seal } from "../lib/encryption.ts";
import { callVcs, type Posted, type VcsTarget } from "./client.ts";

/** A cached token is used only while it has at least this long left (GitHub gives one hour). */
export const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;
/** The app JWT's lifetime: GitHub accepts at most 10 minutes. */
const JWT_LIFETIME_SECONDS = 9 * 60;
/** `iat` is set this far back, as GitHub advises, so a VCS clock slightly behind accepts it. */
const JWT_BACKDATE_SECONDS = 60;

const PEM = /-----BEGIN (RSA )?PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END \1?PRIVATE KEY-----/;

function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) {
    binary += String.fromCharCode(byte);
  }
  return btoa(binary);
}

/** A DER length: short form below 128, else the long form with its byte count. */
function derLength(length: number): number[] {
  if (length < 0x80) {
    return [length];
  }
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) {
    bytes.unshift(rest % 256);
  }
  return [0x80 | bytes.length, ...bytes];
}

/** `version 0` and the rsaEncryption algorithm identifier (OID 1.2.840.113549.1.1.1, NULL). */
const PKCS8_RSA_PREFIX = [
  0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
  0x05, 0x00,
];

/**
 * The PKCS#8 PEM of an RSA private key given as PKCS#1 (`RSA PRIVATE KEY`, what GitHub issues)
 * or PKCS#8 (`PRIVATE KEY`), or null when `pem` is neither. `jose` (like WebCrypto) imports
 * only PKCS#8, so a PKCS#1 key is wrapped: PrivateKeyInfo { 0, rsaEncryption, OCTET STRING }.
 */
export function toPkcs8Pem(pem: string): string | null {
  const match = PEM.exec(pem);
  if (!match?.[2]) {
    return null;
  }
  let der: Uint8Array;
  try {
    der = base64ToBytes(match[2]);
  } catch {
    return null;
  }
  if (match[1]) {
    const octets = [0x04, ...derLength(der.length), ...der];
    const body = [...PKCS8_RSA_PREFIX, ...octets];
    der = Uint8Array.from([0x30, ...derLength(body.length), ...body]);
  }
  const lines = bytesToBase64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}

/** The key for signing app JWTs (RS256), or null when the PEM is not an RSA private key. */
export async function importAppKey(pkcs8Pem: string): Promise<CryptoKey | null> {
  try {
    return await importPKCS8(pkcs8Pem, "RS256");
  } catch {
    return null;
  }
}

/** An app JWT: RS256, `iss` the app id, issued a minute back, expiring within 10 minutes. */
export function appJwt(key: CryptoKey, appId: number, nowMs: number): Promise<string> {
  const now = Math.floor(nowMs / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "RS256", typ: "JWT" })
    .setIssuer(String(appId))
    .setIssuedAt(now - JWT_BACKDATE_SECONDS)
    .setExpirationTime(now + JWT_LIFETIME_SECONDS)
    .sign(key);
}

const tokenAad = (hookId: string, repoPath: string) => `vcs_app_tokens:${hookId}:${repoPath}`;

type AppHook = { id: string; appId: number; pkcs8Pem: string };
type Failed = Posted & { ok: false };

async function cachedToken(deps: Deps, hookId: string, repoPath: string): Promise<string | null> {
  const row = await deps.db.query.vcsAppTokens.findFirst({
    where: and(eq(vcsAppTokens.hookId, hookId), eq(vcsAppTokens.repoPath, repoPath)),
  });
  if (!row || row.expiresAt - TOKEN_REFRESH_MARGIN_MS <= deps.now()) {
    return null;
  }
  const keyring = await loadKeyring(deps.env.ENCRYPTION_KEY);
  const opened = keyring.ok
    ? await open(keyring.value, row.tokenCiphertext, tokenAad(hookId, repoPath))
    : null;
  return opened?.ok ? opened.value : null;
}

async function cacheToken(
  deps: Deps,
  row: {
    hookId: string;
    repoPath: string;
    installationId: number;
    token: string;
    expiresAt: number;
  },
): Promise<void> {
  const keyring = await loadKeyring(deps.env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return;
  }
  const { token, ...rest } = row;
  const sealed = await seal(keyring.value, token, tokenAad(row.hookId, row.repoPath));
  const values = { ...rest, tokenCiphertext: sealed.sealed };
  await deps.db
    .insert(vcsAppTokens)
    .values(values)
    .onConflictDoUpdate({ target: [vcsAppTokens.hookId, vcsAppTokens.repoPath], set: values });
}

/** Forgets a hook's cached installation tokens (its app changed or was removed). */
export function forgetAppTokensQuery(db: Database, hookId: string) {
  return db.delete(vcsAppTokens).where(eq(vcsAppTokens.hookId, hookId));
}

/**
 * An installation token of the hook's app for `repoPath` (`owner/name`) on `apiUrl`: the
 * cached one while it has more than {@link TOKEN_REFRESH_MARGIN_MS} left, else a new one
 * (`GET /repos/{owner}/{repo}/installation`, then
 * `POST /app/installations/{id}/access_tokens` limited to that repository), cached. A refusal
 * (the app is not installed there, a wrong key) answers why, never throws.
 */
export async function installationToken(
  deps: Deps,
  hook: AppHook,
  apiUrl: string,
  repoPath: string,
): Promise<{ ok: true; token: string } | Failed> {
  const path = repoPath.toLowerCase();
  const cached = await cachedToken(deps, hook.id, path);
  if (cached !== null) {
    return { ok: true, token: cached };
  }
  const key = await importAppKey(hook.pkcs8Pem);
  if (key === null) {
    return { ok: false, retryable: false, message: "the hook's GitHub App key does not import" };
  }
  const jwt = await appJwt(key, hook.appId, deps.now());
  const asApp: VcsTarget = { provider: "github", apiUrl, repoPath, token: jwt };
  const installation = await callVcs(asApp, "GET", `/repos/${repoPath}/installation`);
  if (!installation.ok) {
    return { ...installation, message: `GitHub App installation: ${installation.message}` };
  }
  const installationId = (installation.json as { id?: unknown } | null)?.id;
  if (typeof installationId !== "number") {
    return { ok: false, retryable: false, message: "GitHub named no installation id" };
  }
  const name = repoPath.split("/").at(-1) ?? repoPath;
  const minted = await callVcs(
    asApp,
    "POST",
    `/app/installations/${installationId}/access_tokens`,
    {
      repositories: [name],
    },
  );
  if (!minted.ok) {
    return { ...minted, message: `GitHub App token: ${minted.message}` };
  }
  const answer = minted.json as { token?: unknown; expires_at?: unknown } | null;
  const expiresAt = Date.parse(String(answer?.expires_at ?? ""));
  if (typeof answer?.token !== "string" || Number.isNaN(expiresAt)) {
    return { ok: false, retryable: true, message: "GitHub answered no installation token" };
  }
  await cacheToken(deps, {
    hookId: hook.id,
    repoPath: path,
    installationId,
    token: answer.token,
    expiresAt,
  });
  return { ok: true, token: answer.token };
}
