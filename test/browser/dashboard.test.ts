/**
 * The dashboard in headless chromium against the real coordinator on loopback and a real agent
 * process: sign in, create a pool and an agent token, watch the agent become idle, queue a run,
 * watch the agent busy and the log grow, confirm, see it applied and the agent idle again, revoke
 * the token and see the agent exit. Hostile strings go into every name, description and log line;
 * none may execute, and no CSP violation or page error may occur. Every page is checked for
 * standards mode and for no horizontal page scroll at desktop and phone (390 px) widths, and
 * photographed at both into test-results/screenshots/.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { unpackTar } from "modern-tar";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCommands } from "../../src/agents/install-commands.ts";
import {
  ENGINE_VERSION,
  expectStatus,
  setVariable,
  uploadConfiguration,
} from "../e2e/helpers/e2e.ts";
import {
  type AgentProcess,
  exitWithin,
  runShellCommand,
  writeHook,
} from "../e2e/helpers/processes.ts";
import { useWorld } from "../e2e/helpers/world.ts";
import { gzip, tar } from "../worker/helpers/tarball.ts";
import {
  type Browser,
  LOGS_NOT_AT_TAIL,
  launch,
  screenshot,
  WIDTHS,
  waitForText,
} from "./browser.ts";

const xss = (n: number) =>
  `<script>window.pwned=${n}</script><img src=x onerror="window.pwned=${n}">`;

let browser: Browser;
// Launched while the world starts (this hook returns at once; the next one awaits it).
let launched: Promise<Browser>;
beforeAll(() => {
  launched = launch();
  // Awaited below; a failure to launch fails that hook, not the run as an unhandled rejection.
  launched.catch(() => {});
});
const world = useWorld();
let agent: AgentProcess | undefined;
let installScript = "";

beforeAll(async () => {
  browser = await launched;
});
afterAll(() => browser?.close());

async function expectNothingExecuted(page: Page) {
  expect(
    await page.evaluate('typeof window.pwned === "undefined" ? undefined : window.pwned'),
  ).toBeUndefined();
}

describe("the dashboard in chromium", () => {
  let poolUrl = "";
  let poolId = "";
  let agentToken = "";
  let stateUrl = "";
  const tokenDescription = `rack 7 ${xss(1)}`;

  it("signs in with an org token", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/`);
    expect(new URL(page.url()).pathname).toBe("/ui/login");
    await screenshot(page, "01-sign-in");
    await page.getByLabel("Org token").fill(world.ownerToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/ui\/pools$/);
    const cookies = await browser.context.cookies(`${world.coordinator.url}/ui/`);
    const session = cookies.find((c) => c.name === "outpost_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });
    expect(await page.evaluate<string>("document.cookie")).not.toContain("outpost_session");
    await page.close();
  });

  it("creates a pool and an agent token shown once with its install command", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/pools`);
    await page.getByLabel("Name").fill("browser-pool");
    await page.getByLabel("Description").fill(`datacenter ${xss(2)}`);
    await page.getByRole("button", { name: "Create pool" }).click();
    await page.waitForURL(/\/ui\/pools\/pool_[a-z2-7]{26}$/);
    poolUrl = page.url();
    poolId = poolUrl.split("/").pop() ?? "";
    await page.getByLabel("Description").fill(tokenDescription);
    await page.getByRole("button", { name: "Create token" }).click();
    agentToken = ((await page.locator("#new-token").textContent()) ?? "").trim();
    expect(agentToken).toMatch(/^op_agent_[A-Za-z0-9_-]{43}$/);
    const commands = installCommands(world.coordinator.url, agentToken);
    installScript = ((await page.locator("#install-script").textContent()) ?? "").trim();
    expect(installScript).toBe(commands.script);
    expect(((await page.locator("#install-systemd").textContent()) ?? "").trim()).toBe(
      commands.systemd,
    );
    expect(((await page.locator("#install-container").textContent()) ?? "").trim()).toBe(
      commands.container,
    );
    const copy = page.locator('button[data-copy="new-token"]');
    await copy.click();
    await expect.poll(() => copy.textContent(), { timeout: 5_000 }).toMatch(/Copied|Selected/);
    await screenshot(page, "02-pool-token-created");
    await expectNothingExecuted(page);
    // Shown once: a fresh load of the pool page lists the token but not its secret.
    await page.goto(poolUrl);
    expect(await page.content()).not.toContain(agentToken);
    await page.close();
  });

  it("shows the agent idle, busy with a growing log, idle again after confirm and apply", async () => {
    const poolPage = await browser.newPage();
    await poolPage.goto(poolUrl);
    // A pre-plan hook prints a coloured line of markup into the plan log.
    // The agent comes from the install command the page showed, run as pasted in a fresh home
    // on a host with only Node and curl (the engine from the test mirror).
    const home = path.join(world.dir, "browser-host");
    const dataDir = path.join(home, ".local/share/outpost-agent");
    writeHook(dataDir, "pre-plan", `printf '\\033[32m%s\\033[0m\\n' '${xss(8)}'`);
    mkdirSync(home, { recursive: true });
    agent = world.track(
      runShellCommand(
        installScript,
        {
          PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`,
          HOME: home,
          OUTPOST_NAME: `edge ${xss(3)}`,
          OUTPOST_RELEASE_MIRROR: world.mirror.url,
          OUTPOST_ENGINE_KEYRING: world.keyringFile,
        },
        home,
        { label: "the pasted install command", dataDir },
      ),
    );
    await agent.waitForOutput(/registered/);
    // No reload: the live endpoint brings the agent in.
    await waitForText(poolPage, "#agents", /idle/);
    await screenshot(poolPage, "03-pool-agent-idle");

    const ws = await expectStatus(
      world.api("POST", "/api/v1/workspaces", {
        name: "browser-ws",
        description: `network ${xss(4)}`,
        engine: "terraform",
        engineVersion: ENGINE_VERSION,
        executionMode: "agent",
        poolId,
      }),
      201,
    );
    const wsId = String(ws.id);
    await setVariable(world, wsId, "STANDIN_PLAN_SLEEP_MS", "4000", { category: "env" });
    await setVariable(world, wsId, "STANDIN_APPLY_SLEEP_MS", "1500", { category: "env" });
    await setVariable(world, wsId, "greeting", xss(5), { category: "terraform" });
    await setVariable(world, wsId, "password", "hunter2-never-shown", {
      category: "terraform",
      sensitive: true,
    });
    await uploadConfiguration(world, wsId, {
      "main.tf": `variable "greeting" {}\nvariable "password" {}\nresource "null_resource" "a" { value = "one" }\n# ${xss(6)}\noutput "endpoint" { value = "https://app.internal/${"long-path-segment/".repeat(8)}" }\noutput "db_password" {\n  value = "s3cret-output"\n  sensitive = true\n}\n`,
    });

    const runPage = await browser.newPage();
    await runPage.goto(`${world.coordinator.url}/ui/workspaces/${wsId}`);
    expect(await runPage.content()).not.toContain("hunter2-never-shown");
    await screenshot(runPage, "04-workspace");
    await runPage.getByLabel("Operation").selectOption("apply");
    await runPage.getByLabel("Message").fill(`ship it ${xss(7)}`);
    await runPage.getByRole("button", { name: "Queue run" }).click();
    await runPage.waitForURL(/\/ui\/runs\/run_[a-z2-7]{26}/);

    await waitForText(poolPage, "#agents", /busy/);
    await waitForText(poolPage, "#agents", /run_[a-z2-7]{26}:plan/);
    await screenshot(poolPage, "05-pool-agent-busy");
    const early = await waitForText(runPage, "#log-plan", /terraform plan/);
    await screenshot(runPage, "06-run-planning");
    const planned = await waitForText(runPage, "#log-plan", /Plan: 1 to add/);
    expect(planned.length).toBeGreaterThan(early.length);
    const green = runPage.locator("#log-plan span.ansi-fg-2").first();
    expect(await green.textContent()).toContain("<script>window.pwned=8</script>");
    expect(await runPage.locator("#log-plan script, #log-plan img").count()).toBe(0);
    await waitForText(runPage, "#run-summary", /planned/);
    await waitForText(runPage, "#run-summary", /1 to add, 0 to change, 0 to destroy/);
    await screenshot(runPage, "07-run-planned");

    await runPage.getByRole("button", { name: "Confirm and apply" }).click();
    await runPage.waitForLoadState();
    await waitForText(runPage, "#run-summary", /applied/, 60_000);
    await waitForText(runPage, "#log-apply", /Apply complete!/);
    await waitForText(runPage, "#run-timeline", /applying[\s\S]*applied/);
    // The confirm notice is gone once the apply ran; the title and the pool read as words.
    await expect.poll(() => runPage.locator("#run-notice").textContent()).toBe("");
    expect(await runPage.title()).toMatch(/^Plan and apply on browser-ws/);
    await waitForText(runPage, "#run-summary", /in pool browser-pool/);
    await screenshot(runPage, "08-run-applied");
    // Opened afresh at either width, each log box shows its end.
    for (const { width, height } of WIDTHS) {
      await runPage.setViewportSize({ width, height });
      await runPage.reload();
      expect(await runPage.evaluate<string[]>(LOGS_NOT_AT_TAIL), `${width} px`).toEqual([]);
      expect(await runPage.locator("#log-plan").textContent()).toContain("Plan: 1 to add");
    }
    await waitForText(poolPage, "#agents", /idle/);
    await waitForText(runPage, "#run-summary", /Plan ran on[\s\S]*isolation (bwrap|none)/);
    await expectNothingExecuted(runPage);
    await expectNothingExecuted(poolPage);
    await runPage.close();
    await poolPage.close();
    stateUrl = `${world.coordinator.url}/ui/workspaces/${wsId}/state`;
  });

  it("shows the state page with sensitive outputs hidden until an admin reveals them", async () => {
    const page = await browser.newPage();
    await page.goto(stateUrl);
    await waitForText(page, "main", /endpoint/);
    expect(await page.content()).not.toContain("s3cret-output");
    expect(await page.locator("main").textContent()).toContain("(sensitive, hidden)");
    const written = page.locator("main time[data-relative]").first();
    expect(await written.textContent()).toMatch(/ago|just now/);
    expect(await written.getAttribute("title")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await screenshot(page, "09-state");
    await page.getByRole("button", { name: /Reveal sensitive values/ }).click();
    await waitForText(page, "main", /s3cret-output/);
    await page.close();
  });

  it("creates, configures, uploads to, runs on and deletes a workspace through the forms", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/workspaces`);
    const create = page.getByRole("group", { name: "Create a workspace" });
    await create.getByLabel("Name").fill("browser-form-ws");
    await create.getByLabel("Description").fill(`made by hand ${xss(13)}`);
    await create.getByLabel("Agent pool").selectOption(poolId);
    // The version field suggests what the agent reported: latest, a constraint, and the mirror's
    // release, saying where it came from; its list follows the engine chosen.
    const version = create.getByLabel("Engine version");
    await create.getByLabel("Engine", { exact: true }).selectOption("tofu");
    expect(await version.getAttribute("list")).toBe("new-versions-tofu");
    await create.getByLabel("Engine", { exact: true }).selectOption("terraform");
    expect(await version.getAttribute("list")).toBe("new-versions-terraform");
    const suggestions = page.locator("#new-versions-terraform option");
    expect(await suggestions.evaluateAll((os) => os.map((o) => o.getAttribute("value")))).toEqual([
      "latest",
      "~> 1.9.0",
      ENGINE_VERSION,
    ]);
    const offered = page.locator(`#new-versions-terraform option[value="${ENGINE_VERSION}"]`);
    expect(await offered.textContent()).toBe("listed by the mirror (pool browser-pool)");
    await version.fill((await offered.getAttribute("value")) ?? "");
    await screenshot(page, "13b-workspace-create-form");
    await create.getByLabel("Working directory").fill("app");
    await create.getByRole("button", { name: "Create workspace" }).click();
    // Every workspace page answers by name.
    await page.waitForURL(/\/ui\/workspaces\/browser-form-ws\?done=created$/);
    await waitForText(page, "main", /Workspace created\./);
    expect(await page.locator("#run-configuration-note").textContent()).toContain(
      "No configuration yet",
    );
    await screenshot(page, "14-workspace-created");

    const archive = await gzip(
      tar([{ name: "app/main.tf", body: 'resource "null_resource" "b" { value = "two" }\n' }]),
    );
    await page.getByLabel("Configuration (.tar.gz)").setInputFiles({
      name: "config.tar.gz",
      mimeType: "application/gzip",
      buffer: Buffer.from(archive),
    });
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await page.waitForURL(/done=uploaded$/);
    await waitForText(page, "#run-configuration-note", /Uses the newest configuration, cv_/);

    // A folder chosen in the browser, packed there: paths relative to it, without .terraform/
    // and .git/ (the devtools file chooser picks the real directory).
    const folder = world.freshDir("browser-folder");
    const files: [string, string][] = [
      [
        "app/main.tf",
        'resource "null_resource" "b" { value = "two" }\nresource "null_resource" "c" { value = "three" }\n',
      ],
      ["app/.terraform/modules/modules.json", "{}"],
      [".terraform/providers/cache.txt", "provider cache"],
      [".git/HEAD", "ref: refs/heads/main\n"],
      ["README.md", "the folder upload\n"],
    ];
    for (const [file, text] of files) {
      mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
      writeFileSync(path.join(folder, file), text);
    }
    // From the page without the archive's notice, so the folder's own redirect is awaited.
    await page.goto(`${world.coordinator.url}/ui/workspaces/browser-form-ws`);
    await page.getByLabel(/^Folder/).setInputFiles(folder);
    await screenshot(page, "14b-workspace-folder-chosen");
    await page.getByRole("button", { name: "Upload folder" }).click();
    await page.waitForURL(/done=uploaded$/);
    const versions = await expectStatus(
      world.api("GET", "/api/v1/workspaces/browser-form-ws/configuration-versions"),
      200,
    );
    const [newest] = versions.configurationVersions as { id: string }[];
    const download = await fetch(
      `${world.coordinator.url}/api/v1/workspaces/browser-form-ws/configuration-versions/${newest?.id}/download`,
      { headers: { authorization: `Bearer ${world.ownerToken}` } },
    );
    const entries = await unpackTar(gunzipSync(Buffer.from(await download.arrayBuffer())));
    expect(entries.map((e) => e.header.name).sort()).toEqual(["README.md", "app/main.tf"]);
    await waitForText(
      page,
      "#run-configuration-note",
      new RegExp(`Uses the newest configuration, ${newest?.id}`),
    );

    const settings = page.getByRole("group", { name: "Settings" });
    await settings.getByLabel("Auto-apply a successful plan").check();
    await settings.getByRole("button", { name: "Save settings" }).click();
    await page.waitForURL(/done=saved$/);
    await waitForText(page, "dl.facts", /Auto-apply\s*yes/);
    await screenshot(page, "15-workspace-configured");

    await page.getByLabel("Operation").selectOption("plan");
    await page.getByRole("button", { name: "Queue run" }).click();
    await page.waitForURL(/\/ui\/runs\/run_[a-z2-7]{26}/);
    expect(await page.title()).toMatch(/^Plan on browser-form-ws/);
    // The folder's configuration: two resources.
    await waitForText(page, "#run-summary", /planned_and_finished[\s\S]*2 to add/, 60_000);

    await page.goto(`${world.coordinator.url}/ui/workspaces/browser-form-ws`);
    await settings.getByLabel("Execution mode").selectOption("local");
    await settings.getByLabel("Agent pool").selectOption("");
    await settings.getByRole("button", { name: "Save settings" }).click();
    await page.waitForURL(/done=saved$/);
    await waitForText(page, "#backend-block", /backend "http"/);
    await screenshot(page, "16-workspace-local-backend");

    await page.getByLabel("Type browser-form-ws to confirm").fill("browser-form-ws");
    await page.getByRole("button", { name: "Delete workspace" }).click();
    await page.waitForURL(/\/ui\/workspaces\?done=deleted$/);
    await waitForText(page, "main", /Workspace deleted\./);
    await expectNothingExecuted(page);
    await page.close();
  });

  it("lists pools with their agents by status and queued jobs", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/pools`);
    await waitForText(page, "main table", /browser-pool[\s\S]*idle\s*1[\s\S]*0 queued/);
    await screenshot(page, "09-pools");
    await page.close();
  });

  it("revokes the token once its description is typed, and the agent exits", async () => {
    const page = await browser.newPage();
    await page.goto(poolUrl);
    const form = page.locator('form[action*="/revoke"]').first();
    const button = form.getByRole("button", { name: "Revoke" });
    await expect.poll(() => button.isDisabled(), { timeout: 5_000 }).toBe(true);
    await form.getByLabel("Type the description to revoke").fill(tokenDescription);
    await expect.poll(() => button.isDisabled(), { timeout: 5_000 }).toBe(false);
    await button.click();
    await page.waitForURL(/done=token-revoked/);
    if (!agent) {
      throw new Error("no agent started");
    }
    const exit = await exitWithin(agent, 30_000);
    expect(exit.code).not.toBe(0);
    await waitForText(page, "#agents", /exited|errored|unknown/, 30_000);
    await screenshot(page, "10-pool-token-revoked");
    await expectNothingExecuted(page);
    await page.close();
  });

  it("shows org tokens to the owner", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/tokens`);
    await waitForText(page, "main", /owner/);
    await screenshot(page, "11-org-tokens");
    await page.close();
  });

  it("adds an OIDC trust on the pool page and removes it", async () => {
    const page = await browser.newPage();
    await page.goto(poolUrl);
    const form = page.getByRole("group", { name: "Trust an OIDC issuer" });
    await form.getByLabel("Issuer").fill("https://token.actions.githubusercontent.com");
    await form.getByLabel("Audience").fill("outpost");
    await form.getByLabel("Claim conditions").fill("repository=acme/*\nref=refs/heads/main");
    await form.getByLabel("Note").fill(`runners ${xss(12)}`);
    await form.getByRole("button", { name: "Add trust" }).click();
    await page.waitForURL(/done=trust-added/);
    const row = page.locator("tr[data-trust]");
    await expect.poll(() => row.count(), { timeout: 5_000 }).toBe(1);
    expect(await row.textContent()).toContain("repository=acme/*ref=refs/heads/main");
    await screenshot(page, "10a-pool-oidc-trust");
    await expectNothingExecuted(page);
    await row.getByRole("button", { name: "Remove and revoke its tokens" }).click();
    await page.waitForURL(/done=trust-removed/);
    await expect.poll(() => row.count(), { timeout: 5_000 }).toBe(0);
    await page.close();
  });

  it("is readable without JavaScript", async () => {
    const cookies = await browser.context.cookies(`${world.coordinator.url}/ui/`);
    const plain = await launch({ javaScriptEnabled: false });
    try {
      await plain.context.addCookies(cookies);
      const page = await plain.newPage();
      await page.goto(`${world.coordinator.url}/ui/workspaces`);
      await page.getByRole("link", { name: "browser-ws" }).click();
      await page.locator("a.mono[href^='/ui/runs/']").first().click();
      expect(await page.locator("#log-plan").textContent()).toContain("Plan: 1 to add");
      expect(await page.locator("#run-summary").textContent()).toContain("applied");
      await screenshot(page, "12-run-without-javascript");
      expect(plain.problems).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it("signs out, and the session is gone", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/pools`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/ui\/login$/);
    await page.goto(`${world.coordinator.url}/ui/pools`);
    expect(new URL(page.url()).pathname).toBe("/ui/login");
    await page.close();
  });

  it("signs in and reaches a run with the keyboard alone", async () => {
    const page = await browser.newPage();
    await page.goto(`${world.coordinator.url}/ui/login`);
    await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement.textContent")).toBe(
      "Skip to content",
    );
    // Skip link, the home link, then the token field.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement.id")).toBe("token");
    await page.keyboard.type(world.ownerToken);
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/pools$/);
    await page.getByRole("link", { name: "Workspaces" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/workspaces$/);
    await page.getByRole("link", { name: "browser-ws" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/ui\/workspaces\/ws_/);
    await screenshot(page, "13-workspace-after-runs");
    await page.close();
  });

  it("saw no page error, console error or CSP violation", () => {
    expect(browser.problems).toEqual([]);
  });
});
