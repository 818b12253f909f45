import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { settingsTable } from "../../agent/scripts/settings-table.ts";
import { normalizeArgv } from "../../agent/src/config/flags.ts";
import { type AgentConfig, loadConfig } from "../../agent/src/config/load.ts";
import { SETTINGS } from "../../agent/src/config/settings.ts";
import { forgetToken } from "../../agent/src/config/token.ts";
import { UserError } from "../../agent/src/errors.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";
import { AGENT_VERSION } from "../../agent/src/version.ts";

const BIN = path.resolve("agent/src/bin/outpost-agent.ts");
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

/** A loopback port nothing listens on (taken and released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}

/** The configuration `args` and `env` give (not a --help or --version answer). */
function config(args: string[], env: Record<string, string>): AgentConfig {
  const loaded = loadConfig(args, env);
  if ("print" in loaded) {
    throw new Error(`expected a configuration, got: ${loaded.print}`);
  }
  return loaded;
}

function file(name: string, text: string): string {
  const target = path.join(dir, name);
  writeFileSync(target, text);
  return target;
}

describe("outpost-agent configuration (the real bin)", () => {
  it.each([
    [[], {}, "OUTPOST_ADDRESS is required"],
    [
      [],
      { OUTPOST_ADDRESS: "outpost.example.com", OUTPOST_TOKEN: TOKEN },
      "OUTPOST_ADDRESS must be an http(s) URL like https://outpost.example.com",
    ],
    [
      [],
      { OUTPOST_ADDRESS: "https://o.example.com/api/v1", OUTPOST_TOKEN: TOKEN },
      "OUTPOST_ADDRESS https://o.example.com/api/v1 has a path (/api/v1): give the coordinator's base URL, https://o.example.com",
    ],
    [
      ["--address", "https://o.example.com/?org=1"],
      { OUTPOST_TOKEN: TOKEN },
      "--address https://o.example.com/?org=1 has a query (?org=1): give the coordinator's base URL, https://o.example.com",
    ],
    [
      [],
      { TFC_ADDRESS: "ftp://o.example.com", OUTPOST_TOKEN: TOKEN },
      "TFC_ADDRESS must be an http(s) URL like https://outpost.example.com",
    ],
    [[], { OUTPOST_ADDRESS: "https://o.example.com" }, "OUTPOST_TOKEN is required"],
    [
      [],
      { ...GOOD_ENV, OUTPOST_TOKEN: "op_org_nope" },
      "OUTPOST_TOKEN must be an agent token (op_agent_…)",
    ],
    [["--concurrency", "0"], GOOD_ENV, "--concurrency must be an integer between 1 and 64"],
    [[], { ...GOOD_ENV, OUTPOST_CONCURRENCY: "two" }, "OUTPOST_CONCURRENCY must be an integer"],
    [
      ["--accept", "plan,destroy"],
      GOOD_ENV,
      "--accept must list plan and/or apply, e.g. plan,apply",
    ],
    [
      ["-log-level", "loud"],
      GOOD_ENV,
      "--log-level must be one of trace, debug, info, warn, error, fatal",
    ],
    [
      [],
      { ...GOOD_ENV, TFC_AGENT_LOG_LEVEL: "loud" },
      "TFC_AGENT_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal",
    ],
    [["--hook-timeout=0"], GOOD_ENV, "--hook-timeout must be a positive number of seconds"],
    [
      ["--env-forward", "AWS-KEY"],
      GOOD_ENV,
      "--env-forward must be variable names like AWS_REGION or prefixes like AWS_*",
    ],
    [["--release-mirror", "ftp://mirror"], GOOD_ENV, "--release-mirror must be an http(s) URL"],
    [
      [],
      { ...GOOD_ENV, OUTPOST_ADDRESS: "http://10.0.0.5:8787" },
      "OUTPOST_ADDRESS http://10.0.0.5:8787 is plain http to a host that is not loopback: tokens, secrets and agent updates would cross the network unencrypted, and anyone on the way could answer in the coordinator's place; use https, or allow it with --insecure-http on a network you trust",
    ],
    [
      ["--address", "http://outpost.internal"],
      { OUTPOST_TOKEN: TOKEN },
      "--address http://outpost.internal is plain http to a host that is not loopback",
    ],
    [
      ["--release-key", "ed25519:short"],
      GOOD_ENV,
      "--release-key must be ed25519: and a base64 Ed25519 public key (44 characters)",
    ],
    [["--frobnicate"], GOOD_ENV, "unknown option '--frobnicate'"],
    [["--nmae", "x"], GOOD_ENV, "unknown option '--nmae' (Did you mean --name?)"],
    [["-hook-dri", "/x"], GOOD_ENV, "unknown option '-hook-dri'"],
    [["stray"], GOOD_ENV, "too many arguments"],
    [["--single=maybe"], GOOD_ENV, "unknown option '--single=maybe'"],
    [[], { ...GOOD_ENV, OUTPOST_SINGLE: "maybe" }, "OUTPOST_SINGLE"],
    [["--auto-update", "sometimes"], GOOD_ENV, "--auto-update"],
    [
      ["--shutdown-grace=-5"],
      GOOD_ENV,
      "--shutdown-grace must be a number of seconds between 0 and 86400",
    ],
    [
      ["--ca-cert", path.join(dir, "none.pem")],
      GOOD_ENV,
      `--ca-cert ${path.join(dir, "none.pem")}: cannot read the file (ENOENT)`,
    ],
  ])("%j with %j exits 2 with one clear line", (args, env, message) => {
    const { code, stderr, stdout } = agent(args, env);
    expect(code).toBe(EXIT_CODES.badConfig);
    expect(stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(stderr).toContain(`outpost-agent: ${message}`);
    expect(stdout).toBe("");
  });

  it("reports a missing, malformed or unknown-keyed config file in one line", () => {
    const missing = agent(["--config", path.join(dir, "nope.yaml")], GOOD_ENV);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^outpost-agent: --config .*nope\.yaml: cannot read the file \(ENOENT\)\n$/,
    );
    const unknown = agent(
      ["--config", file("bad.json", JSON.stringify({ envForwardAllowlist: ["A"], colour: "b" }))],
      GOOD_ENV,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toContain("colour: unknown setting");
    const broken = agent(["--config", file("broken.yaml", "dataDir: [unclosed\n")], GOOD_ENV);
    expect(broken.stderr).toContain("not valid YAML or JSON");
    const wrong = agent(["--config", file("wrong.yaml", "concurrency: 500\n")], GOOD_ENV);
    expect(wrong.stderr).toContain(": concurrency must be an integer between 1 and 64");
  });

  it("prints usage with every flag, its variable and alias for --help, and the version", () => {
    const help = agent(["--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: outpost-agent");
    for (const spec of SETTINGS) {
      expect(help.stdout).toContain(`--${spec.flag}`);
      expect(help.stdout).toContain(spec.env);
    }
    expect(help.stdout).toContain("TFC_AGENT_TOKEN");
    const version = agent(["--version"], {});
    expect(version).toMatchObject({ code: 0, stdout: `${AGENT_VERSION}\n` });
    expect(agent(["-version"], {}).stdout).toBe(`${AGENT_VERSION}\n`);
  });

  it("documents every setting in agent/README.md exactly as it parses them", () => {
    const readme = readFileSync(path.resolve("agent/README.md"), "utf8");
    expect(readme, "run node agent/scripts/settings-table.ts and paste it").toContain(
      settingsTable(),
    );
  });

  it("never prints the token, also while it retries an unreachable coordinator", async () => {
    const unreachable = { ...GOOD_ENV, OUTPOST_ADDRESS: `http://127.0.0.1:${await closedPort()}` };
    // Until it has retried (not for a fixed time: a loaded host may take seconds to start it).
    const child = spawn(process.execPath, [BIN, "--data-dir", dir, "--log-level", "trace"], {
      env: { PATH: process.env.PATH ?? "", HOME: dir, ...unreachable },
    });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const closed = new Promise((resolve) => child.on("close", resolve));
    try {
      await expect
        .poll(() => stdout, { timeout: 20_000 })
        .toContain("lost contact with the coordinator; retrying with backoff: ");
    } finally {
      child.kill("SIGKILL");
      await closed;
    }
    expect(stdout).toContain("connection refused");
    expect(stdout).toContain("ECONNREFUSED");
    expect(stdout + stderr).not.toContain(TOKEN);
  });
});

describe("loadConfig", () => {
  it("applies defaults: the host name as name, updates on, network settings passed on", () => {
    const config = loadConfig([], { ...GOOD_ENV, XDG_DATA_HOME: "/var/lib" });
    expect(config).toEqual({
      address: "https://outpost.example.com",
      insecureHttp: false,
      token: TOKEN,
      tokenFile: null,
      oidc: null,
      name: hostname(),
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
      isolation: "auto",
      orphanGraceMs: 30_000,
      configFile: null,
      envForward: [],
      releaseMirror: null,
      engineKeyringFile: null,
      caCertFile: null,
      forwardNetworkEnv: true,
      autoUpdate: true,
      releaseKeys: [],
      allowFileRepos: false,
      metricsAddress: null,
      vcsTokens: [],
    });
  });

  it("allows plain http to loopback, and elsewhere only with --insecure-http (flag, variable or file)", () => {
    const at = (address: string) => ({ OUTPOST_ADDRESS: address, OUTPOST_TOKEN: TOKEN });
    for (const loopback of [
      "http://127.0.0.1:8787",
      "http://127.3.4.5",
      "http://localhost:8787",
      "http://[::1]:8787",
    ]) {
      expect(loadConfig([], at(loopback)), loopback).toMatchObject({ insecureHttp: false });
    }
    expect(() => loadConfig([], at("http://[::ffff:10.0.0.5]"))).toThrow(UserError);
    expect(() => loadConfig([], at("http://127.0.0.1.example.com"))).toThrow(UserError);
    const lan = at("http://10.0.0.5:8787");
    expect(loadConfig(["--insecure-http"], lan)).toMatchObject({
      address: "http://10.0.0.5:8787",
      insecureHttp: true,
    });
    expect(config([], { ...lan, OUTPOST_INSECURE_HTTP: "true" }).insecureHttp).toBe(true);
    const yaml = file("insecure.yaml", "insecureHttp: true\n");
    expect(config(["--config", yaml], lan).insecureHttp).toBe(true);
    expect(config([], at("https://10.0.0.5")).insecureHttp).toBe(false);
  });

  it("reads --release-key from flags, OUTPOST_RELEASE_KEY lists and the config file", () => {
    const a = `ed25519:${Buffer.alloc(32, 1).toString("base64")}`;
    const b = `ed25519:${Buffer.alloc(32, 2).toString("base64")}`;
    expect(config(["--release-key", a, "--release-key", b], GOOD_ENV).releaseKeys).toEqual([a, b]);
    expect(config([], { ...GOOD_ENV, OUTPOST_RELEASE_KEY: `${a},${b}` }).releaseKeys).toEqual([
      a,
      b,
    ]);
    const yaml = file("keys.yaml", `releaseKey:\n  - ${a}\n`);
    expect(config(["--config", yaml], GOOD_ENV).releaseKeys).toEqual([a]);
  });

  it("reads --metrics-address as HOST:PORT from a flag, its variable or the config file", () => {
    const yaml = file("metrics.yaml", "metricsAddress: 0.0.0.0:9464\n");
    expect(loadConfig(["--config", yaml], GOOD_ENV)).toMatchObject({
      metricsAddress: { host: "0.0.0.0", port: 9464 },
    });
    expect(
      loadConfig(["--config", yaml], { ...GOOD_ENV, OUTPOST_METRICS_ADDRESS: "[::]:9100" }),
    ).toMatchObject({ metricsAddress: { host: "::", port: 9100 } });
    expect(
      loadConfig(["--metrics-address", "localhost:0"], {
        ...GOOD_ENV,
        OUTPOST_METRICS_ADDRESS: "[::]:9100",
      }),
    ).toMatchObject({ metricsAddress: { host: "localhost", port: 0 } });
    for (const bad of [
      "9464",
      ":9464",
      "0.0.0.0:70000",
      "host:port",
      "http://0.0.0.0:9464",
      "a b:1",
    ]) {
      expect(() => loadConfig(["--metrics-address", bad], GOOD_ENV), bad).toThrow(
        "--metrics-address must be HOST:PORT, e.g. 0.0.0.0:9464, 127.0.0.1:9464 or [::]:9464",
      );
    }
  });

  it("reads flags over variables over the YAML file, merging nothing but the winner", () => {
    const tokenFile = file("token", `${TOKEN}\n`);
    const config = file(
      "agent.yaml",
      [
        "# a Pulumi-style file",
        "env_forward_allowlist: [AWS_*, VAULT_ADDR]",
        "concurrency: 8",
        "hookTimeoutSeconds: 5",
        "accept: [apply]",
        `tokenFile: ${tokenFile}`,
        "autoUpdate: false",
        "name: from-file",
      ].join("\n"),
    );
    const loaded = loadConfig(
      [
        "--config",
        config,
        "--single",
        "--log-json",
        "--concurrency",
        "3",
        "--data-dir",
        "/srv/op",
        "--env-forward",
        "HTTPS_PROXY",
        "--env-forward",
        "NO_PROXY,SSL_CERT_FILE",
        "--release-mirror",
        "http://127.0.0.1:8080/mirror/",
        "--allow-file-repos",
      ],
      {
        OUTPOST_ADDRESS: "https://outpost.example.com",
        OUTPOST_NAME: "dc1-runner-7",
        OUTPOST_LOG_LEVEL: "debug",
        OUTPOST_HOOKS_DIR: "/etc/op-hooks",
      },
    );
    expect(loaded).toMatchObject({
      token: TOKEN,
      tokenFile,
      name: "dc1-runner-7",
      single: true,
      logLevel: "debug",
      logJson: true,
      concurrency: 3,
      accept: ["apply"],
      dataDir: "/srv/op",
      hooksDir: "/etc/op-hooks",
      hookTimeoutMs: 5000,
      envForward: ["HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE"],
      releaseMirror: "http://127.0.0.1:8080/mirror",
      autoUpdate: false,
      allowFileRepos: true,
    });
    expect(loadConfig(["--config", config], GOOD_ENV)).toMatchObject({ tokenFile: null });
  });

  it("accepts Terraform Cloud's variables and single-dash flags", () => {
    const loaded = loadConfig(["-single", "-log-level=warn", "-name", "tfc-style"], {
      TFC_ADDRESS: "https://tfc.example.com",
      TFC_AGENT_TOKEN: TOKEN,
      TFC_AGENT_AUTO_UPDATE: "disabled",
      TFC_AGENT_DATA_DIR: "/tmp/tfc",
    });
    expect(loaded).toMatchObject({
      address: "https://tfc.example.com",
      token: TOKEN,
      single: true,
      logLevel: "warn",
      name: "tfc-style",
      autoUpdate: false,
      dataDir: "/tmp/tfc",
    });
    const fromEnv = loadConfig([], {
      ...GOOD_ENV,
      TFC_AGENT_SINGLE: "true",
      TFC_AGENT_NAME: "n",
      TFC_AGENT_LOG_LEVEL: "error",
      OUTPOST_LOG_LEVEL: "trace",
    });
    expect(fromEnv).toMatchObject({ single: true, name: "n", logLevel: "trace" });
    expect(normalizeArgv(["-single", "-h", "-x", "-log-level=debug"])).toEqual([
      "--single",
      "-h",
      "-x",
      "--log-level=debug",
    ]);
  });

  it("reads the token from --token-file, refusing both sources at once and a file without one", () => {
    const tokenFile = file("agent.token", `  ${TOKEN}\n`);
    const address = { OUTPOST_ADDRESS: "https://o.example.com" };
    expect(loadConfig(["--token-file", tokenFile], address)).toMatchObject({
      token: TOKEN,
      tokenFile,
    });
    expect(() => loadConfig(["--token-file", tokenFile], GOOD_ENV)).toThrow(
      "OUTPOST_TOKEN and --token-file are both set; keep one",
    );
    const empty = file("empty.token", "\n");
    expect(() => loadConfig([], { ...address, OUTPOST_TOKEN_FILE: empty })).toThrow(
      `--token-file ${empty}: does not hold an agent token (op_agent_…)`,
    );
  });

  it("forgets the token from the environment once read", () => {
    const env: NodeJS.ProcessEnv = { ...GOOD_ENV, TFC_AGENT_TOKEN: TOKEN, KEEP: "1" };
    loadConfig([], env);
    forgetToken(env);
    expect(env).toEqual({ OUTPOST_ADDRESS: GOOD_ENV.OUTPOST_ADDRESS, KEEP: "1" });
  });

  it("checks --ca-cert holds certificates", () => {
    const notPem = file("not.pem", "hello\n");
    expect(() => loadConfig(["--ca-cert", notPem], GOOD_ENV)).toThrow(
      `--ca-cert ${notPem}: holds no PEM certificate`,
    );
    const broken = file(
      "broken.pem",
      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    expect(() => loadConfig([], { ...GOOD_ENV, OUTPOST_CA_CERT: broken })).toThrow(
      "a certificate does not parse",
    );
  });

  it("throws UserError, never anything else, for bad input", () => {
    expect(() => loadConfig(["--accept", ""], GOOD_ENV)).toThrow(UserError);
    expect(() => loadConfig(["stray-positional"], GOOD_ENV)).toThrow(UserError);
    expect(() => loadConfig(["--concurrency"], GOOD_ENV)).toThrow(UserError);
  });
});

describe("loadConfig: logging in with OIDC", () => {
  const POOL = `pool_${"b".repeat(26)}`;
  const ADDRESS = { OUTPOST_ADDRESS: "https://outpost.example.com" };

  it("takes the token file, pool and expiration from flags, variables or the config file", () => {
    const jwt = file("oidc.jwt", "eyJ.a.b\n");
    expect(
      loadConfig(
        ["--oidc-token-file", jwt, "--pool-id", POOL, "--token-expiration", "2h"],
        ADDRESS,
      ),
    ).toMatchObject({
      token: null,
      tokenFile: null,
      oidc: { tokenFile: jwt, poolId: POOL, tokenExpirationSeconds: 7200 },
    });
    expect(
      loadConfig([], {
        ...ADDRESS,
        OUTPOST_OIDC_TOKEN_FILE: jwt,
        OUTPOST_POOL_ID: POOL,
        OUTPOST_TOKEN_EXPIRATION: "900",
      }),
    ).toMatchObject({ oidc: { tokenFile: jwt, poolId: POOL, tokenExpirationSeconds: 900 } });
    const config = file(
      "pulumi-style.yaml",
      `oidc_token_file: ${jwt}\npool_id: ${POOL}\ntoken_expiration: 1h30m\n`,
    );
    expect(loadConfig(["--config", config], ADDRESS)).toMatchObject({
      token: null,
      oidc: { tokenFile: jwt, poolId: POOL, tokenExpirationSeconds: 5400 },
    });
    expect(loadConfig(["--oidc-token-file", jwt, "--pool-id", POOL], ADDRESS)).toMatchObject({
      oidc: { tokenExpirationSeconds: 3600 },
    });
  });

  it.each([
    [["--pool-id", POOL], GOOD_ENV, "and OUTPOST_TOKEN are both set; keep one"],
    [["--token-file", "/x"], {}, "and --token-file are both set; keep one"],
    [[], {}, "needs the pool to log in to: --pool-id"],
    [["--pool-id", "pool_nope"], {}, "--pool-id must be a pool id"],
    [["--pool-id", POOL, "--token-expiration", "5"], {}, "--token-expiration must be seconds"],
    [["--pool-id", POOL, "--token-expiration", "3d"], {}, "--token-expiration must be seconds"],
    [["--pool-id", POOL, "--token-expiration", "25h"], {}, "--token-expiration must be seconds"],
  ])("refuses %j with a one-line UserError", (args, env, message) => {
    const jwt = file("refused.jwt", "eyJ.a.b");
    const attempt = () => loadConfig(["--oidc-token-file", jwt, ...args], { ...ADDRESS, ...env });
    expect(attempt).toThrow(UserError);
    expect(attempt).toThrow(message);
  });
});
