import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
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
                  TEST_MIGRATIONS: migrations,
                  BOOTSTRAP_TOKEN: "test-bootstrap-secret-0123456789abcdef",
                  ENCRYPTION_KEY: "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                  ALLOW_MULTIPLE_ORGS: "true",
                  // Small enough that a test can cross it with a few chunks.
                  LOG_MAX_BYTES: "2097152",
                },
              },
            }),
          ],
          test: {
            name: "worker",
            include: ["test/worker/**/*.test.ts"],
            globalSetup: ["./test/setup/build-agent.ts"],
            setupFiles: ["./test/worker/setup/apply-migrations.ts"],
          },
        },
        {
          test: {
            name: "node",
            environment: "node",
            globalSetup: ["./test/setup/build-agent.ts"],
            include: ["test/node/**/*.test.ts", "test/e2e/**/*.test.ts", "test/chaos/**/*.test.ts"],
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
        {
          test: {
            name: "browser",
            environment: "node",
            globalSetup: ["./test/setup/build-agent.ts"],
            include: ["test/browser/**/*.test.ts"],
            testTimeout: 180_000,
            hookTimeout: 120_000,
          },
        },
      ],
    },
  };
});
