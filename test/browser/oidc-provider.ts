/**
 * A real OpenID provider for the sign-in tests: the `oidc-provider` package (OpenID Certified) on
 * 127.0.0.1 with an OS-chosen port, one confidential client for the coordinator (authorization
 * code with PKCE, client_secret_basic), and its development login form, which accepts any login
 * name: `<login>@example.com` signs in with the groups the test gives that login.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export type TestProvider = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Sets the name and groups a login signs in with (default: no groups). */
  person(login: string, claims: { name?: string; groups?: string[] }): void;
  stop(): Promise<void>;
};

/** Starts the provider for a coordinator at `coordinatorUrl`. */
export async function startProvider(coordinatorUrl: string): Promise<TestProvider> {
  const people = new Map<string, { name?: string; groups?: string[] }>();
  const server: Server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = "outpost";
  const clientSecret = `secret-${crypto.randomUUID()}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [`${coordinatorUrl}/auth/sso/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    pkce: { required: () => true },
    // The ID token carries the scopes' claims itself (the coordinator reads no userinfo).
    conformIdTokenClaims: false,
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "groups"] },
    cookies: { keys: [crypto.randomUUID()] },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({
        sub: id,
        email: `${id}@example.com`,
        email_verified: true,
        name: people.get(id)?.name ?? id,
        groups: people.get(id)?.groups ?? [],
      }),
    }),
  });
  server.on("request", provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    person: (login, claims) => people.set(login, claims),
    stop: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
