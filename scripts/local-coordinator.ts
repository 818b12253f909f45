/**
 * The real coordinator for Node-side tests and benchmarks: `wrangler dev`'s engine
 * (`unstable_startWorker`, Miniflare and workerd underneath) with this repository's
 * wrangler.toml on a loopback port, with D1, R2 and Durable Objects persisted in a directory so
 * it can be stopped and started again on the same state.
 */
import { execFile } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { unstable_startWorker } from "wrangler";
import { buildAssets, DEFAULT_ASSETS_DIR, isBuilt } from "./build.ts";
import { generateSigningKey } from "./signing-key.ts";

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "..");
const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");

/** A free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export type CoordinatorOptions = {
  /** Where D1, R2 and Durable Objects persist; a fresh temp dir when absent. */
  persistDir?: string;
  port?: number;
  /** Overrides of wrangler.toml vars (e.g. shorter timeouts for a test). */
  vars?: Record<string, string>;
  /** Another Worker entry for the same wrangler.toml (the bench's counting wrapper). */
  entrypoint?: string;
  /**
   * Static assets to serve instead of wrangler.toml's (`dist/assets`: the dashboard and the
   * agent build), e.g. another agent build for an update test.
   */
  assetsDir?: string;
  /**
   * Receives the Worker's own log (its `console` calls) instead of the terminal, e.g. to print it
   * only when a test fails.
   */
  onLog?: (level: string, message: string) => void;
  /**
   * A state directory the migrations were already applied to (`applyMigrations`), copied into
   * the new state instead of applying them again: tests migrate once per run, not per coordinator.
   */
  migratedState?: string;
};

let building: Promise<unknown> | null = null;

/**
 * Builds the default static assets when they are missing (a fresh clone), once per process:
 * wrangler refuses to start without its assets directory. A present build is used as it is;
 * `npm run build`, the bench and the test projects' global setups make it current.
 */
export async function ensureAssets(): Promise<void> {
  if (await isBuilt(DEFAULT_ASSETS_DIR)) {
    return;
  }
  building ??= buildAssets(DEFAULT_ASSETS_DIR).finally(() => {
    building = null;
  });
  await building;
}

// The Request.cf lookup needs the internet; Miniflare's placeholder is fine on loopback.
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
// `dev.logLevel` below covers only part of wrangler's logging: its local runtime would still print
// an info line per queue batch into whatever test or benchmark is running.
process.env.WRANGLER_LOG ??= "warn";

export const TEST_BOOTSTRAP_TOKEN = "local-bootstrap-secret-0123456789";
const TEST_ENCRYPTION_KEY = "local1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET_NAMES = new Set(["BOOTSTRAP_TOKEN", "ENCRYPTION_KEY", "OIDC_SIGNING_KEYS"]);

export type LocalCoordinator = {
  url: string;
  port: number;
  persistDir: string;
  /** Bootstraps an organization (first call only) and returns its owner token. */
  bootstrap(name?: string): Promise<string>;
  /** Fires the cron handler once, as Cloudflare does every minute. */
  cron(): Promise<void>;
  /** Stops the runtime; the state stays on disk. */
  stop(): Promise<void>;
  /**
   * Stops and starts again on the same port and state; `vars` replace the ones it ran with (a
   * redeploy with, say, a rotated ENCRYPTION_KEY), the others stay.
   */
  restart(vars?: Record<string, string>): Promise<void>;
  /** Stops and deletes the state when it was a temp dir. */
  dispose(): Promise<void>;
};

/** Applies the D1 migrations to the persisted local database, exactly as `npm start` does. */
export async function applyMigrations(persistDir: string): Promise<void> {
  await run(
    process.execPath,
    [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistDir],
    { cwd: root, env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" } },
  );
}

/** Starts the coordinator and resolves once it answers `/healthz`. */
export async function startCoordinator(
  options: CoordinatorOptions = {},
): Promise<LocalCoordinator> {
  const isTempDir = options.persistDir === undefined;
  const persistDir = options.persistDir ?? (await mkdtemp(join(tmpdir(), "outpost-state-")));
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  let ownerToken: string | null = null;
  if (!options.assetsDir) {
    await ensureAssets();
  }
  // A signing key per coordinator (kept across restarts), so no private key is committed.
  const [signingKey] = await Promise.all([
    generateSigningKey("local1"),
    options.migratedState
      ? cp(options.migratedState, persistDir, { recursive: true })
      : applyMigrations(persistDir),
  ]);
  let vars: Record<string, string> = {
    BOOTSTRAP_TOKEN: TEST_BOOTSTRAP_TOKEN,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    OIDC_SIGNING_KEYS: signingKey,
    // The issuer of workload identity tokens is this coordinator; loopback issuers may be trusted.
    PUBLIC_URL: url,
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
    ...options.vars,
  };

  const create = () =>
    unstable_startWorker({
      config: join(root, "wrangler.toml"),
      ...(options.entrypoint ? { entrypoint: options.entrypoint } : {}),
      ...(options.assetsDir ? { assets: options.assetsDir } : {}),
      // The assets are built before (ensureAssets above, or the tests' global setup), not by
      // every coordinator a test starts: parallel test files would build at the same time.
      build: { custom: { command: "" } },
      // The secrets as secrets: wrangler.toml lists them as required, and wrangler warns about
      // every required secret not given as one.
      bindings: Object.fromEntries(
        Object.entries(vars).map(([name, value]) => [
          name,
          { type: SECRET_NAMES.has(name) ? "secret_text" : "plain_text", value },
        ]),
      ),
      dev: {
        server: { hostname: "127.0.0.1", port },
        persist: persistDir,
        inspector: false,
        watch: false,
        liveReload: false,
        logLevel: "warn",
        ...(options.onLog
          ? {
              structuredLogsHandler: (log: { level: string; message: string }) =>
                options.onLog?.(log.level, log.message),
            }
          : {}),
      },
    });

  let worker: Worker | null = await create();
  await worker.ready;

  const coordinator: LocalCoordinator = {
    url,
    port,
    persistDir,
    async bootstrap(name = "e2e") {
      if (ownerToken) {
        return ownerToken;
      }
      const res = await fetch(`${url}/api/v1/bootstrap`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ name }),
      });
      if (res.status !== 201) {
        throw new Error(`bootstrap answered ${res.status}: ${await res.text()}`);
      }
      ownerToken = ((await res.json()) as { token: { token: string } }).token.token;
      return ownerToken;
    },
    async cron() {
      const res = await fetch(
        `${url}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}`,
      );
      await res.arrayBuffer();
    },
    async stop() {
      await worker?.dispose();
      worker = null;
    },
    async restart(overrides = {}) {
      await coordinator.stop();
      vars = { ...vars, ...overrides };
      worker = await create();
      await worker.ready;
    },
    async dispose() {
      await coordinator.stop();
      if (isTempDir) {
        await rm(persistDir, { recursive: true, force: true });
      }
    },
  };
  return coordinator;
}
