/**
 * OIDC in Worker tests: issuers whose keys are generated and used inside workerd with jose and
 * whose discovery document and JWKS are served from 127.0.0.1 by the loopback issuer host of
 * test/setup/oidc-issuer.ts, which the coordinator fetches like any real issuer.
 */
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { expect, inject } from "vitest";
import { requestJson } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";

let counter = 0;

export type TestKey = {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
};

export async function rsaKey(kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" };
  return { kid, privateKey, publicKey, jwk };
}

/** One issuer on the loopback host, with its own name and keys. */
export class TestIssuer {
  readonly name: string;
  readonly url: string;
  keys: TestKey[] = [];

  constructor(name: string) {
    this.name = name;
    this.url = `${inject("oidcIssuerUrl")}/${name}`;
  }

  /** A fresh issuer publishing one RSA key (`<name>-k1`). */
  static async create(prefix = "issuer"): Promise<TestIssuer> {
    const issuer = new TestIssuer(`${prefix}-${counter++}-${Date.now().toString(36)}`);
    issuer.keys = [await rsaKey(`${issuer.name}-k1`)];
    await issuer.publish();
    return issuer;
  }

  /** Publishes the public half of `keys` (default: this issuer's keys) as its JWKS. */
  async publish(keys: JWK[] = this.keys.map((k) => k.jwk)): Promise<void> {
    const res = await fetch(`${this.url}/jwks`, { method: "PUT", body: JSON.stringify({ keys }) });
    expect(res.status).toBe(204);
  }

  get key(): TestKey {
    const key = this.keys[0];
    if (!key) {
      throw new Error("issuer has no key");
    }
    return key;
  }

  /**
   * A token from this issuer for `aud` and `sub` (plus `claims`), signed RS256 with its first key
   * unless told otherwise; `iat` now, `exp` in five minutes and a fresh `jti` (as Kubernetes and
   * CI issuers set one) unless `claims` says otherwise.
   */
  sign(
    claims: JWTPayload,
    options: { key?: TestKey; kid?: string; issuer?: string; nowMs?: number } = {},
  ): Promise<string> {
    const key = options.key ?? this.key;
    const now = Math.floor((options.nowMs ?? Date.now()) / 1000);
    const standard = { iss: options.issuer ?? this.url, iat: now, exp: now + 300 };
    return new SignJWT({ ...standard, jti: crypto.randomUUID(), ...claims })
      .setProtectedHeader({ alg: "RS256", kid: options.kid ?? key.kid, typ: "JWT" })
      .sign(key.privateKey);
  }
}

export type TrustBody = {
  id: string;
  poolId: string;
  issuer: string;
  audience: string;
  claims: Record<string, string>;
};

/** Adds a trust to the pool through the API (owner). */
export async function addTrust(
  org: TestOrg,
  poolId: string,
  body: { issuer: string; audience: string; claims: Record<string, string> },
): Promise<TrustBody> {
  const res = await requestJson<TrustBody>(`/api/v1/pools/${poolId}/oidc-trusts`, {
    method: "POST",
    token: org.ownerToken,
    body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export type ExchangeAnswer = {
  token: string;
  expiresAt: string;
  tokenId: string;
  poolId: string;
  error: { code: string; message: string; requestId: string; details?: { reason?: string } };
};

/** `POST /agent/v1/oidc/exchange`, optionally renewing with `previous` as bearer. */
export function exchange(
  poolId: string,
  oidcToken: string,
  options: { tokenExpirationSeconds?: number; previous?: string } = {},
) {
  return requestJson<ExchangeAnswer>("/agent/v1/oidc/exchange", {
    method: "POST",
    token: options.previous ?? null,
    body: {
      poolId,
      oidcToken,
      ...(options.tokenExpirationSeconds === undefined
        ? {}
        : { tokenExpirationSeconds: options.tokenExpirationSeconds }),
    },
  });
}
