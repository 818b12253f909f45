/**
 * A loopback OpenID Connect issuer for tests: any number of issuers under one HTTP server on
 * 127.0.0.1, each at `/<name>` with its discovery document and JWKS. Keys are whatever a test
 * publishes (`PUT /<name>/jwks` with a JSON Web Key Set, or `publish()` from Node), so Worker
 * tests can generate and sign with jose inside workerd and only host the public half here.
 * Its discovery document names a token endpoint that redeems codes a test scripted (`PUT
 * /<name>/codes/<code>`), as a provider would. An issuer named `…-redirected` publishes a `jwks_uri` that answers a redirect, one named
 * `…-lying` a discovery document naming another issuer (the attacks a verifier must refuse). Hostile
 * issuers for the size and host checks: `…-huge` pads its JWKS with megabytes (streamed, no
 * Content-Length), `…-manykeys` publishes its key among 60 copies under other kids, `…-bigdoc`
 * pads its discovery document, `…-privatejwks` names a `jwks_uri` on a private address. The
 * server's own origin is an issuer too (`PUT /_root/jwks`), as a deployment whose `PUBLIC_URL` is
 * a loopback origin is. Every request is counted per path, so a test can see that a key set was
 * (or was not) fetched again.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

export type IssuerKey = {
  kid: string;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  publicJwk: JWK;
};

/** An RSA key pair with its public JWK (RS256, the given kid). */
export async function rsaKey(kid: string): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  return {
    kid,
    privateKey,
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" },
  };
}

/** Signs `claims` with `key` (RS256 by default); `iat`/`exp` default to now and now + 5 min. */
export function signWith(
  key: IssuerKey,
  claims: JWTPayload,
  options: { alg?: string; kid?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: options.alg ?? "RS256", kid: options.kid ?? key.kid, typ: "JWT" })
    .sign(key.privateKey);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * An authorization code a test made for the token endpoint: redeemed once, with the PKCE verifier
 * whose S256 is `codeChallenge` and the client's basic credentials, for `idToken`.
 */
type ScriptedCode = {
  idToken: string;
  codeChallenge: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
};

export class OidcIssuerServer {
  private server: Server | null = null;
  private readonly keySets = new Map<string, { keys: JWK[] }>();
  private readonly codes = new Map<string, ScriptedCode>();
  readonly hits = new Map<string, number>();

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) {
      throw new Error("issuer server not started");
    }
    return `http://127.0.0.1:${address.port}`;
  }

  /** The issuer URL of `name` (its `iss`). */
  issuer(name: string): string {
    return `${this.url}/${name}`;
  }

  /** Publishes the public keys of issuer `name`, replacing what it published before. */
  publish(name: string, keys: JWK[]): void {
    this.keySets.set(name, { keys });
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      if (this.streamHuge(req, res)) {
        return;
      }
      this.handle(req)
        .then(({ status, body, headers }) => {
          res.writeHead(status, { "content-type": "application/json", ...headers });
          res.end(body);
        })
        .catch((error: unknown) => {
          res.writeHead(500);
          res.end(String(error));
        });
    });
    await new Promise<void>((done) => this.server?.listen(0, "127.0.0.1", done));
  }

  async stop(): Promise<void> {
    await new Promise<void>((done) => {
      this.server?.closeAllConnections();
      this.server?.close(() => done());
    });
    this.server = null;
  }

  /**
   * The JWKS of a `…-huge` issuer: its keys, then 8 MiB of padding in 64 KiB chunks without a
   * Content-Length, so only a reader that counts as it reads can stop early. True when it answered.
   */
  private streamHuge(req: IncomingMessage, res: ServerResponse): boolean {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const [, name = "", tail] = path.split("/");
    const keySet = this.keySets.get(name);
    if (req.method !== "GET" || !name.endsWith("-huge") || tail !== "jwks" || !keySet) {
      return false;
    }
    this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
    res.writeHead(200, { "content-type": "application/json" });
    res.write(`{"keys":${JSON.stringify(keySet.keys)},"padding":"`);
    const chunk = "x".repeat(64 * 1024);
    let left = 128;
    const more = () => {
      while (left > 0) {
        left -= 1;
        if (!res.write(chunk)) {
          res.once("drain", more);
          return;
        }
      }
      res.end('"}');
    };
    res.on("error", () => {});
    more();
    return true;
  }

  /** The discovery document of issuer `name` (or of the root issuer, `name` ""). */
  private discovery(name: string): Record<string, unknown> {
    const issuer = name === "" ? this.url : this.issuer(name);
    const document: Record<string, unknown> = {
      issuer: name.endsWith("-lying") ? `${issuer}-other` : issuer,
      jwks_uri: `${issuer}/jwks`,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
    };
    if (name === "") {
      document.jwks_uri = `${this.url}/_root/jwks`;
    } else if (name.endsWith("-redirected")) {
      document.jwks_uri = `${issuer}/redirect/jwks`;
    } else if (name.endsWith("-privatejwks")) {
      document.jwks_uri = "https://10.0.0.5/keys";
    } else if (name.endsWith("-bigdoc")) {
      document.padding = "x".repeat(2 * 1024 * 1024);
    }
    return document;
  }

  /** The key set issuer `name` serves: `…-manykeys` hides its keys among 60 copies. */
  private served(name: string, keySet: { keys: JWK[] }): { keys: JWK[] } {
    if (!name.endsWith("-manykeys")) {
      return keySet;
    }
    const copies = Array.from({ length: 60 }, (_, i) =>
      keySet.keys.map((key) => ({ ...key, kid: `${key.kid ?? "k"}-copy-${i}` })),
    );
    return { keys: [...copies.flat(), ...keySet.keys] };
  }

  private async handle(
    req: IncomingMessage,
  ): Promise<{ status: number; body: string; headers?: Record<string, string> }> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
    if (path === "/.well-known/openid-configuration" && this.keySets.has("_root")) {
      return { status: 200, body: JSON.stringify(this.discovery("")) };
    }
    const [, name = "", ...rest] = path.split("/");
    const tail = rest.join("/");
    if (req.method === "PUT" && tail === "jwks") {
      this.publish(name, (JSON.parse(await readBody(req)) as { keys: JWK[] }).keys);
      return { status: 204, body: "" };
    }
    if (req.method === "PUT" && tail.startsWith("codes/")) {
      this.codes.set(`${name}/${tail.slice(6)}`, JSON.parse(await readBody(req)) as ScriptedCode);
      return { status: 204, body: "" };
    }
    if (req.method === "POST" && tail === "token") {
      return this.redeem(name, req);
    }
    if (tail.startsWith("redirect/")) {
      return {
        status: 302,
        body: "",
        headers: { location: `${this.url}/${name}/${tail.slice(9)}` },
      };
    }
    if (tail === ".well-known/openid-configuration" && this.keySets.has(name)) {
      return { status: 200, body: JSON.stringify(this.discovery(name)) };
    }
    const keySet = this.keySets.get(name);
    if (tail === "jwks" && keySet) {
      return { status: 200, body: JSON.stringify(this.served(name, keySet)) };
    }
    return { status: 404, body: "{}" };
  }

  /**
   * The token endpoint, as a provider answers it: a code is redeemed once (a replay is
   * `invalid_grant`), only with the client's credentials, the same redirect URI, and the PKCE
   * verifier of the challenge the code was made for.
   */
  private async redeem(name: string, req: IncomingMessage) {
    const form = new URLSearchParams(await readBody(req));
    const key = `${name}/${form.get("code") ?? ""}`;
    const code = this.codes.get(key);
    this.codes.delete(key);
    const refuse = (error: string) => ({ status: 400, body: JSON.stringify({ error }) });
    if (!code || form.get("grant_type") !== "authorization_code") {
      return refuse("invalid_grant");
    }
    const basic = Buffer.from(
      `${encodeURIComponent(code.clientId)}:${encodeURIComponent(code.clientSecret)}`,
    ).toString("base64");
    if (req.headers.authorization !== `Basic ${basic}`) {
      return { status: 401, body: JSON.stringify({ error: "invalid_client" }) };
    }
    const verifier = form.get("code_verifier") ?? "";
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    if (challenge !== code.codeChallenge || form.get("redirect_uri") !== code.redirectUri) {
      return refuse("invalid_grant");
    }
    return {
      status: 200,
      body: JSON.stringify({ access_token: "at", token_type: "Bearer", id_token: code.idToken }),
    };
  }
}
