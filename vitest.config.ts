import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { generateSigningKey } from "./scripts/signing-key.ts";

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  // Generated per run, so no private key is ever committed, even a test one.
  const [signingKey, nextSigningKey] = await Promise.all([
    generateSigningKey("test1"),
    generateSigningKey("test2"),
  ]);
  const bindings = {
    TEST_MIGRATIONS: migrations,
    BOOTSTRAP_TOKEN: "test-bootstrap-secret-0123456789abcdef",
    ENCRYPTION_KEY: "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    ALLOW_MULTIPLE_ORGS: "true",
    OIDC_SIGNING_KEYS: signingKey,
    /** A second key, for the rotation tests. */
    TEST_NEXT_SIGNING_KEY: nextSigningKey,
    PUBLIC_URL: "https://outpost.test",
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
    NOTIFICATIONS_ALLOW_LOOPBACK: "true",
    VCS_ALLOW_LOOPBACK: "true",
  };
  return {
    test: {
      // Two files at a time: much of each test waits on workerd, sockets and child processes.
      maxWorkers: 2,
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  ...bindings,
                  // Small enough that a test can cross it with a few chunks.
                  LOG_MAX_BYTES: "2097152",
                },
              },
            }),
          ],
          test: {
            name: "worker",
            include: ["test/worker/**/*.test.ts"],
            // A route test walks the whole auth matrix, dozens of requests: under a loaded
            // two-core host that outlasts vitest's 5 s default.
            testTimeout: 30_000,
            globalSetup: [
              "./test/setup/build-agent.ts",
              "./test/setup/oidc-issuer.ts",
              "./test/setup/webhook-receiver.ts",
              "./test/setup/fake-github.ts",
              "./test/setup/fake-gitlab.ts",
            ],
            setupFiles: ["./test/worker/setup/apply-migrations.ts"],
          },
        },
        {
          // The least-privilege findings, reproduced through the real routes in workerd, with the
          // deployment's own log cap (a 50 MB live log must not be truncated).
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: { bindings },
            }),
          ],
          test: {
            name: "security",
            include: ["test/security/worker/**/*.test.ts"],
            testTimeout: 30_000,
            globalSetup: ["./test/setup/build-agent.ts", "./test/setup/oidc-issuer.ts"],
            setupFiles: ["./test/worker/setup/apply-migrations.ts"],
          },
        },
        {
          // Fast: the agent's parts with real child processes and temp dirs, no coordinator.
          test: {
            name: "node",
            environment: "node",
            globalSetup: [
              "./test/setup/build-agent.ts",
              "./test/setup/fake-github.ts",
              "./test/setup/fake-gitlab.ts",
            ],
            include: ["test/node/**/*.test.ts"],
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
        {
          // The real coordinator, agents, mirror and git server (test/e2e/helpers/world.ts).
          test: {
            name: "e2e",
            environment: "node",
            // Four files at a time: they mostly wait (on agents, engines' sleeps, the pools'
            // liveness windows and a two-minute coordinator outage), so more files overlap those
            // waits; e2e + browser measured 516 s with four against 640 s with three on this
            // two-core host (and, before the outage test grew, 266-273 s with three against
            // 431-505 s with two).
            maxWorkers: 4,
            globalSetup: [
              "./test/setup/build-agent.ts",
              "./test/setup/migrated-state.ts",
              "./test/setup/fake-github.ts",
            ],
            include: [
              "test/e2e/**/*.test.ts",
              "test/chaos/**/*.test.ts",
              "test/security/e2e/**/*.test.ts",
            ],
            testTimeout: 60_000,
            hookTimeout: 120_000,
          },
        },
        {
          test: {
            name: "browser",
            environment: "node",
            maxWorkers: 4,
            globalSetup: ["./test/setup/build-agent.ts", "./test/setup/migrated-state.ts"],
            include: ["test/browser/**/*.test.ts"],
            testTimeout: 180_000,
            hookTimeout: 120_000,
          },
        },
      ],
    },
  };
});
