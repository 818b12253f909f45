/**
 * `terraform login <host>` through login.v1 against a real coordinator, driven by the stand-in
 * `terraform` (test/fixtures/terraform-cloud.mjs, which follows `internal/command/login.go`):
 * once the organization signs people in through SSO, discovery advertises the OAuth client; the
 * CLI listens on a loopback port of 10000–10010, prints the authorization URL and waits; a person
 * signed in (Cloudflare Access here) consents on the page; the redirect reaches the CLI's
 * listener, which exchanges the code and PKCE verifier for a personal token and stores it. Then `terraform init` works with only that stored token.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IssuerKey, OidcIssuerServer, rsaKey, signWith } from "../node/helpers/oidc-issuer.ts";
import { expectStatus } from "./helpers/e2e.ts";
import { Laptop, sequence } from "./helpers/terraform-cli.ts";
import { useWorld } from "./helpers/world.ts";

const ACCESS_TEAM = "outpost-e2e.cloudflareaccess.com";
const ACCESS_AUD = "e".repeat(64);
// One loopback server plays both parties: the SSO provider (its discovery document is checked
// when the settings are stored) and Access's certificate set.
const issuers = new OidcIssuerServer();
let accessKey: IssuerKey;
beforeAll(async () => {
  await issuers.start();
  accessKey = await rsaKey("access-1");
  issuers.publish("access", [accessKey.publicJwk]);
  issuers.publish("idp", [(await rsaKey("idp-1")).publicJwk]);
});
afterAll(() => issuers.stop());

const world = useWorld(() => ({
  vars: {
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
    ACCESS_TEAM_DOMAIN: ACCESS_TEAM,
    ACCESS_AUD,
    ACCESS_CERTS_URL: `${issuers.issuer("access")}/jwks`,
  },
}));

/** The world's organization (scripts/local-coordinator.ts bootstraps "e2e"). */
const org = "e2e";

/** The session cookies a response set, as a browser sends them back. */
function cookiesOf(res: Response): string {
  return (res.headers.getSetCookie() ?? []).map((c) => c.split(";")[0]).join("; ");
}

/**
 * What the person does in the browser `terraform login` opened: signed in through Access, opens
 * the authorization URL, allows (the form with its CSRF field) and follows the redirect to the
 * CLI's loopback listener. Returns where the redirect pointed.
 */
async function consentInBrowser(authorizationUrl: string): Promise<URL> {
  const assertion = await signWith(accessKey, {
    iss: `https://${ACCESS_TEAM}`,
    aud: ACCESS_AUD,
    sub: "access-grace",
    email: "grace@example.com",
    groups: ["laptop-people"],
  });
  const headers = { "cf-access-jwt-assertion": assertion };
  const page = await fetch(authorizationUrl, { headers, redirect: "manual" });
  const html = await page.text();
  expect(page.status, html).toBe(200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const form = new URLSearchParams({ _csrf: csrf, decision: "allow" });
  for (const [name, value] of new URL(authorizationUrl).searchParams) {
    form.set(name, value);
  }
  const answer = await fetch(new URL("/ui/terraform-login", authorizationUrl), {
    method: "POST",
    headers: {
      ...headers,
      cookie: cookiesOf(page),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: form,
    redirect: "manual",
  });
  expect(answer.status, await answer.text()).toBe(303);
  const redirect = new URL(answer.headers.get("location") ?? "");
  // The CLI's own listener answers the browser: a real request to the loopback port it chose.
  // It listens on 127.0.0.1 only (login.go's tcp4 listener), so the request goes there rather
  // than to whatever `localhost` resolves to first.
  const landed = await fetch(Object.assign(new URL(redirect), { hostname: "127.0.0.1" }));
  expect(landed.status).toBe(200);
  expect(await landed.text()).toContain("returned an authentication code to Terraform");
  return redirect;
}

describe("terraform login through login.v1", () => {
  it("consents in the browser, the CLI exchanges the code and stores the token, init uses it", async () => {
    const host = new URL(world.coordinator.url).host;
    await expectStatus(
      world.api("PUT", "/api/v1/organization/sso", {
        issuer: issuers.issuer("idp"),
        clientId: "outpost",
        clientSecret: "idp-secret",
        groupsClaim: "groups",
        emailClaim: "email",
      }),
      200,
    );
    await expectStatus(
      world.api("POST", "/api/v1/teams", {
        name: "laptop-people",
        idpGroups: ["laptop-people"],
        organizationRole: "admin",
      }),
      201,
    );

    const l = new Laptop(world.freshDir("laptop"), host);
    let agreed = false;
    let browsed: Promise<URL> | undefined;
    const login = await l.run(["login", host], {
      timeoutMs: 30_000,
      onStdout: (text, child) => {
        if (!agreed && text.includes("Only 'yes' will be accepted to confirm.")) {
          agreed = true;
          child.stdin?.write("yes\n");
        }
        const url = /Open the following URL[^\n]*\n\s+(\S+)/.exec(text)?.[1];
        if (url && browsed === undefined && text.includes("Terraform will now wait")) {
          browsed = consentInBrowser(url);
          // Whatever the browser saw, the CLI has nothing more to read.
          void browsed.then(
            () => child.stdin?.end(),
            () => child.kill("SIGTERM"),
          );
        }
      },
    });
    expect(browsed, login.stdout + login.stderr).toBeDefined();
    const redirect = await (browsed ?? Promise.reject(new Error("never opened")));
    expect(login.code, login.stderr + login.stdout).toBe(0);

    const opened = new URL(/Open the following URL[^\n]*\n\s+(\S+)/.exec(login.stdout)?.[1] ?? "");
    expect(opened.pathname).toBe("/ui/terraform-login");
    expect(opened.searchParams.get("client_id")).toBe("terraform-cli");
    expect(opened.searchParams.get("code_challenge_method")).toBe("S256");
    // The listener's port is whichever of the advertised range was free.
    const port = Number(redirect.port);
    expect(port).toBeGreaterThanOrEqual(10000);
    expect(port).toBeLessThanOrEqual(10010);
    expect(opened.searchParams.get("redirect_uri")).toBe(`http://localhost:${port}/login`);
    expect(redirect.searchParams.get("state")).toBe(opened.searchParams.get("state"));

    // login.go's code grant makes no TFE API call of its own: the token, then the TFE success line.
    expect(login.stdout).toContain(`Success! Logged in to Terraform Enterprise (${host})`);
    expect(sequence(login.requests)).toEqual([
      "GET /.well-known/terraform.json",
      "POST /auth/terraform/token",
    ]);
    // One form POST with client_id in the body (oauth2.AuthStyleInParams), never a Basic header.
    const exchanged = login.requests[1];
    expect(Object.keys(exchanged?.headers ?? {}).map((k) => k.toLowerCase())).not.toContain(
      "authorization",
    );
    const sent = new URLSearchParams(exchanged?.body ?? "");
    expect(sent.get("client_id")).toBe("terraform-cli");
    expect(sent.get("grant_type")).toBe("authorization_code");
    expect(sent.get("code")).toBe(redirect.searchParams.get("code"));
    expect(sent.get("redirect_uri")).toBe(`http://localhost:${port}/login`);
    expect(sent.get("code_verifier")).toMatch(/^[0-9a-f-]{36}\.\d{9}$/);
    const stored = JSON.parse(readFileSync(l.credentialsFile, "utf8")) as {
      credentials: Record<string, { token: string }>;
    };
    const token = stored.credentials[host]?.token ?? "";
    expect(token).toMatch(/^op_user_/);
    // The token acts as the person who consented.
    const me = await fetch(`${world.coordinator.url}/api/v2/account/details`, {
      headers: { authorization: `Bearer ${token}`, accept: "application/vnd.api+json" },
    });
    expect(me.status).toBe(200);
    expect(JSON.stringify(await me.json())).toContain("grace@example.com");

    // The stored credentials only (no TF_TOKEN_ variable): init discovers and creates the workspace.
    l.write({
      "main.tf": `terraform {\n  cloud {\n    hostname     = "${host}"\n    organization = "${org}"\n    workspaces {\n      name = "sso-laptop"\n    }\n  }\n}\n`,
    });
    const init = await l.run(["init"]);
    expect(init.code, init.stderr).toBe(0);
    expect(sequence(init.requests)).toContain(
      `GET /api/v2/organizations/${org}/workspaces/sso-laptop`,
    );
  });
});
