/**
 * `npm start`: the coordinator on http://127.0.0.1:8787 with everything local and persisted under
 * `.wrangler/`. Generates local secrets (bootstrap token, encryption key, workload identity
 * signing key) into `.dev.vars` when absent, and a local agent release signing key into
 * `.wrangler/release-signing-key.pem` (the build's, not the Worker's: it signs the agent
 * release the build makes, and the Worker never sees it), applies the D1 migrations,
 * starts `wrangler dev`, and on the first start bootstraps an organization and prints its owner
 * token once. Later starts reuse the state and print no secret. `wrangler dev` runs
 * wrangler.toml's `[build]` (`scripts/build.ts`) before it serves, so a fresh clone gets its
 * static assets (the dashboard's files, the agent release) without a build of its own.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureReleaseKeyFile, LOCAL_RELEASE_KEY_FILE } from "../agent/scripts/release-key.ts";
import { generateSigningKey } from "./signing-key.ts";

const HOST = "127.0.0.1";
const PORT = Number(process.env.PORT ?? 8787);
const PERSIST_DIR = ".wrangler/state";
const DEV_VARS = ".dev.vars";
const ORG_NAME = process.env.OUTPOST_ORG ?? "default";
const WRANGLER = "node_modules/wrangler/bin/wrangler.js";
const quietEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  NO_UPDATE_NOTIFIER: "1",
  // The Request.cf fetch needs the internet; the placeholder is fine locally.
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

/** Reads `.dev.vars`, adding any missing local secret; returns the values. */
async function ensureDevVars(): Promise<Record<string, string>> {
  const text = existsSync(DEV_VARS) ? readFileSync(DEV_VARS, "utf8") : "";
  const vars: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const match = /^\s*([A-Z0-9_]+)\s*=\s*"?([^"]*)"?\s*$/.exec(line);
    if (match?.[1]) {
      vars[match[1]] = match[2] ?? "";
    }
  }
  const additions: string[] = [];
  if (!vars.BOOTSTRAP_TOKEN) {
    vars.BOOTSTRAP_TOKEN = randomBytes(32).toString("base64url");
    additions.push(`BOOTSTRAP_TOKEN="${vars.BOOTSTRAP_TOKEN}"`);
  }
  if (!vars.ENCRYPTION_KEY) {
    vars.ENCRYPTION_KEY = `local1:${randomBytes(32).toString("base64")}`;
    additions.push(`ENCRYPTION_KEY="${vars.ENCRYPTION_KEY}"`);
  }
  if (!vars.OIDC_SIGNING_KEYS) {
    vars.OIDC_SIGNING_KEYS = await generateSigningKey("local1");
    additions.push(`OIDC_SIGNING_KEYS="${vars.OIDC_SIGNING_KEYS}"`);
  }
  if (additions.length > 0) {
    const prefix = text && !text.endsWith("\n") ? "\n" : "";
    writeFileSync(DEV_VARS, `${text}${prefix}${additions.join("\n")}\n`, { mode: 0o600 });
    console.log(`outpost: wrote local secrets to ${DEV_VARS}`);
  }
  return vars;
}

function applyMigrations(): void {
  const result = spawnSync(
    process.execPath,
    [WRANGLER, "d1", "migrations", "apply", "DB", "--local", "--persist-to", PERSIST_DIR],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...quietEnv, CI: "true" } },
  );
  if (result.status !== 0) {
    console.error("outpost: applying the D1 migrations failed");
    process.exit(result.status ?? 1);
  }
}

async function waitForHealth(deadlineMs: number): Promise<void> {
  while (Date.now() < deadlineMs) {
    try {
      const res = await fetch(`http://${HOST}:${PORT}/healthz`);
      if (res.ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  throw new Error(`the coordinator did not answer on http://${HOST}:${PORT}/healthz in time`);
}

async function bootstrapOnce(bootstrapToken: string): Promise<void> {
  const res = await fetch(`http://${HOST}:${PORT}/api/v1/bootstrap`, {
    method: "POST",
    headers: { authorization: `Bearer ${bootstrapToken}`, "content-type": "application/json" },
    body: JSON.stringify({ name: ORG_NAME }),
  });
  if (res.status === 409) {
    console.log(
      "outpost: state reused from .wrangler/ (already bootstrapped; use your saved token)",
    );
    return;
  }
  if (res.status !== 201) {
    throw new Error(`bootstrap failed with ${res.status}: ${await res.text()}`);
  }
  const body = (await res.json()) as { organization: { name: string }; token: { token: string } };
  const token = body.token.token;
  console.log(
    [
      "",
      `outpost: created organization "${body.organization.name}" with an owner token (shown once, save it now):`,
      "",
      `  ${token}`,
      "",
      `  try: curl -H "Authorization: Bearer ${token}" http://${HOST}:${PORT}/api/v1/organization`,
      "",
    ].join("\n"),
  );
}

async function main(): Promise<void> {
  const vars = await ensureDevVars();
  if (!process.env.OUTPOST_RELEASE_SIGNING_KEY && !process.env.OUTPOST_RELEASE_SIGNING_KEY_FILE) {
    if (await ensureReleaseKeyFile(LOCAL_RELEASE_KEY_FILE)) {
      console.log(
        "outpost: wrote a local agent release signing key to .wrangler/release-signing-key.pem",
      );
    }
  }
  applyMigrations();
  const dev = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "--ip",
      HOST,
      "--port",
      String(PORT),
      "--persist-to",
      PERSIST_DIR,
      "--show-interactive-dev-session=false",
      // This local coordinator issues workload identity tokens as itself, may trust OIDC issuers
      // on loopback (a local test issuer) and send notifications to loopback receivers; a
      // deployment sets none of these.
      "--var",
      `PUBLIC_URL:http://${HOST}:${PORT}`,
      "--var",
      "OIDC_ALLOW_LOOPBACK_ISSUERS:true",
      "--var",
      "NOTIFICATIONS_ALLOW_LOOPBACK:true",
    ],
    { stdio: ["ignore", "inherit", "inherit"], env: quietEnv },
  );
  const stop = (signal: NodeJS.Signals) => {
    dev.kill(signal);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  dev.on("exit", (code, signal) => {
    process.exit(code ?? (signal ? 0 : 1));
  });
  await waitForHealth(Date.now() + 120_000);
  await bootstrapOnce(vars.BOOTSTRAP_TOKEN ?? "");
  // wrangler dev does not fire cron triggers; fire the cron handler every minute as Cloudflare
  // does: the reconciler, due schedules and due assessments.
  setInterval(() => {
    fetch(`http://${HOST}:${PORT}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}`)
      .then((res) => res.arrayBuffer())
      .catch(() => {
        // the dev server is restarting or stopping; the next minute tries again
      });
  }, 60_000).unref();
}

main().catch((err: unknown) => {
  console.error(`outpost: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
