/**
 * GitHub Apps for the loopback GitHub (`fake-github.ts`): an app registered by a test gets a
 * fresh RSA key pair (its private key handed out as GitHub does, PKCS#1 PEM, and as PKCS#8).
 * App JWTs are verified as GitHub does: RS256 signature by the app's public key, `iss` the app
 * id, `iat` not in the future, `exp` at most 10 minutes ahead. Installation tokens are minted
 * for the repositories asked for and honoured only for those, until they expire.
 */
import { generateKeyPairSync, type KeyObject, randomBytes } from "node:crypto";
import { decodeJwt, jwtVerify } from "jose";

/** What a test gets back when it registers an app: its ids and private key, both encodings. */
export type RegisteredApp = {
  appId: number;
  installationId: number;
  privateKey: string;
  privateKeyPkcs8: string;
};

type App = { publicKey: KeyObject; installationId: number; tokenLifetimeSeconds: number };
type InstallationToken = { appId: number; repositories: string[]; expiresAt: number };

/** GitHub's longest app JWT lifetime. */
const MAX_JWT_SECONDS = 600;

export class FakeApps {
  private readonly apps = new Map<number, App>();
  private readonly tokens = new Map<string, InstallationToken>();
  private nextAppId = 100;

  /** A new app; its installation tokens live `tokenLifetimeSeconds` (GitHub: one hour). */
  register(tokenLifetimeSeconds = 3600): RegisteredApp {
    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const appId = this.nextAppId++;
    const installationId = appId * 1000 + 7;
    this.apps.set(appId, { publicKey, installationId, tokenLifetimeSeconds });
    return {
      appId,
      installationId,
      privateKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      privateKeyPkcs8: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    };
  }

  /** The app a bearer JWT authenticates, or GitHub's 401 message for why not. */
  async appOf(jwt: string): Promise<{ appId: number } | { error: string }> {
    let issuer: string | undefined;
    try {
      issuer = decodeJwt(jwt).iss;
    } catch {
      return { error: "A JSON web token could not be decoded" };
    }
    const appId = Number(issuer);
    const app = this.apps.get(appId);
    if (!app) {
      return { error: "Integration not found" };
    }
    try {
      const { payload } = await jwtVerify(jwt, app.publicKey, { algorithms: ["RS256"] });
      const now = Math.floor(Date.now() / 1000);
      if (typeof payload.iat !== "number" || payload.iat > now) {
        return {
          error: "'Issued at' claim ('iat') must be an Integer representing a time in the past.",
        };
      }
      if (typeof payload.exp !== "number" || payload.exp - now > MAX_JWT_SECONDS) {
        return { error: "'Expiration time' claim ('exp') is too far in the future" };
      }
    } catch (error) {
      return { error: `A JSON web token could not be verified: ${String(error)}` };
    }
    return { appId };
  }

  /** The installation of `appId` (every app is installed on every repository here). */
  installationOf(appId: number): number | undefined {
    return this.apps.get(appId)?.installationId;
  }

  /** A new installation token of `appId` for `repositories`, as GitHub answers it. */
  mint(appId: number, repositories: string[]): { token: string; expires_at: string } {
    const lifetime = this.apps.get(appId)?.tokenLifetimeSeconds ?? 3600;
    const token = `ghs_${randomBytes(18).toString("hex")}`;
    const expiresAt = Date.now() + lifetime * 1000;
    this.tokens.set(token, { appId, repositories, expiresAt });
    return { token, expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z") };
  }

  /**
   * What an installation token may do on `path`: its app, or why not (401 unknown or expired,
   * 403 for a repository it was not minted for). Undefined: not an installation token.
   */
  tokenOn(
    token: string,
    path: string,
  ): { appId: number } | { status: 401 | 403; message: string } | undefined {
    if (!token.startsWith("ghs_")) {
      return undefined;
    }
    const found = this.tokens.get(token);
    if (!found || found.expiresAt <= Date.now()) {
      return { status: 401, message: "Bad credentials" };
    }
    const repo = /^\/repos\/[^/]+\/([^/]+)\//.exec(path)?.[1];
    if (repo === undefined || !found.repositories.includes(repo)) {
      return { status: 403, message: "Resource not accessible by integration" };
    }
    return { appId: found.appId };
  }
}
