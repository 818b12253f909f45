import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../agent/src/config.ts";
import { UserError } from "../../agent/src/errors.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";

const BIN = path.resolve("agent/bin/outpost-agent.ts");
const TOKEN = "op_agent_AbCdEf0123456789_-xyz";
const GOOD_ENV = { OUTPOST_ADDRESS: "https://outpost.example.com/", OUTPOST_TOKEN: TOKEN };
const dir = mkdtempSync(path.join(tmpdir(), "outpost-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function agent(args: string[], env: Record<string, string>, timeoutMs = 20_000) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("outpost-agent configuration (the real bin)", () => {
  it.each([
    [[], {}, "OUTPOST_ADDRESS is required"],
    [
      [],
      { OUTPOST_ADDRESS: "outpost.example.com", OUTPOST_TOKEN: TOKEN },
      "OUTPOST_ADDRESS must be an http(s) URL",
    ],
    [[], { OUTPOST_ADDRESS: "https://o.example.com" }, "OUTPOST_TOKEN is required"],
    [
      [],
      { ...GOOD_ENV, OUTPOST_TOKEN: "op_org_nope" },
      "OUTPOST_TOKEN must be an agent token (op_agent_…)",
    ],
    [["--concurrency", "0"], GOOD_ENV, "--concurrency must be an integer between 1 and 64"],
    [["--concurrency", "two"], GOOD_ENV, "--concurrency must be an integer between 1 and 64"],
    [
      ["--accept", "plan,destroy"],
      GOOD_ENV,
      "--accept must list plan and/or apply, e.g. plan,apply",
    ],
    [
      ["--log-level", "loud"],
      GOOD_ENV,
      "--log-level must be one of trace, debug, info, warn, error, fatal",
    ],
    [["--hook-timeout=0"], GOOD_ENV, "--hook-timeout must be a positive number of seconds"],
    [
      ["--env-forward", "AWS-KEY"],
      GOOD_ENV,
      "--env-forward must be variable names like AWS_REGION or prefixes like AWS_*",
    ],
    [["--release-mirror", "ftp://mirror"], GOOD_ENV, "--release-mirror must be an http(s) URL"],
    [["--hook-timeout", "soon"], GOOD_ENV, "--hook-timeout must be a positive number of seconds"],
    [["--frobnicate"], GOOD_ENV, "Unknown option '--frobnicate'"],
    [
      ["--shutdown-grace=-5"],
      GOOD_ENV,
      "--shutdown-grace must be a number of seconds between 0 and 86400",
    ],
    [
      ["--cancel-grace", "soon"],
      GOOD_ENV,
      "--cancel-grace must be a number of seconds between 1 and 3600",
    ],
  ])("%j with %j exits 2 with one clear line", (args, env, message) => {
    const { code, stderr, stdout } = agent(args, env);
    expect(code).toBe(EXIT_CODES.badConfig);
    expect(stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(stderr).toContain(`outpost-agent: ${message}`);
    expect(stdout).toBe("");
  });

  it("reports a missing or malformed config file in one line", () => {
    const missing = agent(["--config", path.join(dir, "nope.json")], GOOD_ENV);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^outpost-agent: --config .*nope\.json: cannot read the file \(ENOENT\)\n$/,
    );
    const file = path.join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ envForwardAllowlist: ["A"], colour: "blue" }));
    const unknown = agent(["--config", file], GOOD_ENV);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toContain("colour");
  });

  it("prints usage for --help and exits 0", () => {
    const { code, stdout } = agent(["--help"], {});
    expect(code).toBe(0);
    expect(stdout).toContain("Usage: outpost-agent");
  });

  it("never prints the token, also while it retries an unreachable coordinator", () => {
    const unreachable = { ...GOOD_ENV, OUTPOST_ADDRESS: "http://127.0.0.1:9" };
    const { stdout, stderr } = agent(
      ["--data-dir", dir, "--log-level", "trace"],
      unreachable,
      3_000,
    );
    expect(stdout).toContain("register failed; retrying");
    expect(stdout + stderr).not.toContain(TOKEN);
  });
});

describe("loadConfig", () => {
  it("applies defaults", () => {
    const config = loadConfig([], { ...GOOD_ENV, XDG_DATA_HOME: "/var/lib" });
    expect(config).toEqual({
      address: "https://outpost.example.com",
      token: TOKEN,
      name: null,
      single: false,
      logLevel: "info",
      logJson: false,
      concurrency: 1,
      accept: ["plan", "apply"],
      dataDir: "/var/lib/outpost-agent",
      hooksDir: "/var/lib/outpost-agent/hooks",
      hookTimeoutMs: 60_000,
      shutdownGraceMs: 300_000,
      cancelGraceMs: 30_000,
      envForward: [],
      releaseMirror: null,
      allowFileRepos: false,
    });
  });

  it("reads every flag, merges the config file allowlist, and lets flags win", () => {
    const file = path.join(dir, "agent.json");
    writeFileSync(
      file,
      JSON.stringify({
        envForwardAllowlist: ["AWS_*", "VAULT_ADDR"],
        concurrency: 8,
        hookTimeoutSeconds: 5,
        accept: ["apply"],
      }),
    );
    const config = loadConfig(
      [
        "--config",
        file,
        "--single",
        "--log-level",
        "debug",
        "--log-json",
        "--concurrency",
        "3",
        "--data-dir",
        "/srv/op",
        "--hooks-dir",
        "/etc/op-hooks",
        "--env-forward",
        "HTTPS_PROXY",
        "--env-forward",
        "NO_PROXY,SSL_CERT_FILE",
        "--release-mirror",
        "http://127.0.0.1:8080/mirror/",
        "--allow-file-repos",
      ],
      { ...GOOD_ENV, OUTPOST_NAME: "dc1-runner-7" },
    );
    expect(config).toMatchObject({
      name: "dc1-runner-7",
      single: true,
      logLevel: "debug",
      logJson: true,
      concurrency: 3,
      accept: ["apply"],
      dataDir: "/srv/op",
      hooksDir: "/etc/op-hooks",
      hookTimeoutMs: 5000,
      envForward: ["HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "AWS_*", "VAULT_ADDR"],
      releaseMirror: "http://127.0.0.1:8080/mirror",
      allowFileRepos: true,
    });
  });

  it("throws UserError, never anything else, for bad input", () => {
    expect(() => loadConfig(["--accept", ""], GOOD_ENV)).toThrow(UserError);
    expect(() => loadConfig(["stray-positional"], GOOD_ENV)).toThrow(UserError);
  });
});
