/**
 * People in chromium against the real coordinator: sign-in through a real OpenID provider
 * (`oidc-provider` on loopback) end to end, the header naming the person, the API answering the
 * signed-in browser, `outpost login --sso` approved in that browser and `outpost whoami` naming
 * the person, sign-out ending the session server-side, and a person arriving through Cloudflare
 * Access (a loopback certificate set) signed in without a second login.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus } from "../e2e/helpers/e2e.ts";
import { runCli } from "../e2e/helpers/processes.ts";
import { useWorld } from "../e2e/helpers/world.ts";
import { type IssuerKey, OidcIssuerServer, rsaKey, signWith } from "../node/helpers/oidc-issuer.ts";
import { type Browser, launch, screenshot } from "./browser.ts";
import { startProvider, type TestProvider } from "./oidc-provider.ts";

const ACCESS_TEAM = "outpost-browser.cloudflareaccess.com";
const ACCESS_AUD = "f".repeat(64);

let browser: Browser;
let provider: TestProvider;
const certs = new OidcIssuerServer();
let accessKey: IssuerKey;
let home: string;

// Launched while the world starts (this hook returns at once; the one after the world's awaits).
let launched: Promise<Browser>;
beforeAll(async () => {
  launched = launch();
  // Awaited below; a failure to launch fails that hook, not the run as an unhandled rejection.
  launched.catch(() => {});
  await certs.start();
  accessKey = await rsaKey("access-1");
  certs.publish("access", [accessKey.publicJwk]);
});
const world = useWorld(() => ({
  vars: {
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
    ACCESS_TEAM_DOMAIN: ACCESS_TEAM,
    ACCESS_AUD,
    ACCESS_CERTS_URL: `${certs.issuer("access")}/jwks`,
  },
}));

beforeAll(async () => {
  browser = await launched;
  provider = await startProvider(world.coordinator.url);
  provider.person("grace", { name: "Grace Hopper", groups: ["platform"] });
  await expectStatus(
    world.api("POST", "/api/v1/teams", {
      name: "platform",
      idpGroups: ["platform"],
      organizationRole: "member",
    }),
    201,
  );
  await expectStatus(
    world.api("PUT", "/api/v1/organization/sso", {
      issuer: provider.issuer,
      clientId: provider.clientId,
      clientSecret: provider.clientSecret,
    }),
    200,
  );
  home = world.freshDir("sso-cli-home");
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([provider?.stop(), certs.stop()]);
});

/** Runs the CLI in this file's home; `onStderr` sees its error stream as it arrives. */
function cli(args: string[], onStderr?: (text: string) => void) {
  // A sign-in waits on the browser, which is slow to start on a loaded host.
  return runCli(args, { home, timeoutMs: 90_000, onStderr });
}

describe("single sign-on in chromium", () => {
  let sessionCookie = "";

  it("signs in through the organization's provider, and the header names the person", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/workspaces`);
    expect(new URL(page.url()).pathname).toBe("/ui/login");
    await screenshot(page, "20-sign-in-with-sso");
    await page.getByRole("link", { name: "Sign in with SSO" }).click();
    // The provider's own sign-in and consent pages.
    await page.waitForURL(new RegExp(`^${provider.issuer}/interaction/`));
    await page.locator('input[name="login"]').fill("grace");
    await page.locator('input[name="password"]').fill("any password");
    await page.getByRole("button", { name: /sign-in/i }).click();
    await page.getByRole("button", { name: /continue/i }).click();
    await page.waitForURL(`${world.coordinator.url}/ui/workspaces`);
    expect(await page.locator("#signed-in-as").textContent()).toBe(
      "Grace Hopper <grace@example.com> (member)",
    );
    await screenshot(page, "21-signed-in-as-a-person");
    const cookies = await browser.context.cookies(world.coordinator.url);
    const session = cookies.find((c) => c.name === "outpost_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });
    sessionCookie = session?.value ?? "";
    // The signed-in browser calls the API with its session, same-origin.
    const me = await page.evaluate(async () => {
      const res = await fetch("/api/v1/user");
      return (await res.json()) as { email: string; teams: { name: string }[] };
    });
    expect(me.email).toBe("grace@example.com");
    expect(me.teams.map((t) => t.name)).toEqual(["platform"]);
    await page.close();
  });

  it("approves `outpost login --sso` in the signed-in browser; whoami names the person", async () => {
    const page = await browser.newPage();
    let opened = false;
    const login = cli(["login", "--sso", "--address", world.coordinator.url], (stderr) => {
      const url = /Open (\S+) in a browser/.exec(stderr)?.[1];
      if (url && !opened) {
        opened = true;
        void page.goto(url);
      }
    });
    await page.waitForURL(/\/ui\/cli-login\//);
    const code = (await page.locator("#cli-code").textContent())?.trim() ?? "";
    expect(code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    await screenshot(page, "22-approve-cli-login");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Approved.").waitFor();
    const done = await login;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(code);
    expect(done.stderr).toContain("as grace@example.com");
    const who = await cli(["whoami"]);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout).toMatch(
      /^Grace Hopper <grace@example\.com> in \S+ \(org_\w+\) as member, teams platform/,
    );
    await page.close();
  });

  it("signs out: the session ends server-side, so a copy of the cookie no longer works", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/workspaces`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${world.coordinator.url}/ui/login`);
    const res = await fetch(`${world.coordinator.url}/api/v1/user`, {
      headers: { cookie: `outpost_session=${sessionCookie}`, "sec-fetch-site": "same-origin" },
    });
    expect(res.status).toBe(401);
    await page.close();
  });
});

describe("behind Cloudflare Access", () => {
  it("the person Access names is signed in with no second login", async () => {
    const assertion = await signWith(accessKey, {
      iss: `https://${ACCESS_TEAM}`,
      aud: ACCESS_AUD,
      sub: "access-user",
      email: "linus@example.com",
      groups: ["platform"],
    });
    const behindAccess = await launch();
    try {
      await behindAccess.context.setExtraHTTPHeaders({ "cf-access-jwt-assertion": assertion });
      const page = await behindAccess.newPage();
      await page.goto(`${world.coordinator.url}/ui/workspaces`);
      expect(new URL(page.url()).pathname).toBe("/ui/workspaces");
      expect(await page.locator("#signed-in-as").textContent()).toBe("linus@example.com (member)");
      await screenshot(page, "23-signed-in-through-access");
      expect(behindAccess.problems).toEqual([]);
    } finally {
      await behindAccess.close();
    }
  });
});
