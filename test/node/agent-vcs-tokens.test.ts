/**
 * The agent's VCS tokens (agent-mode feedback): where they come from (variables, token files,
 * `vcsTokens` per host in the config file), the one host each is bound to, the refusals, and
 * that the variables leave the environment so nothing the agent starts inherits them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type AgentConfig, loadConfig } from "../../agent/src/config/load.ts";
import { UserError } from "../../agent/src/errors.ts";
import { forgetVcsTokens } from "../../agent/src/feedback/tokens.ts";
import { jobSecretFiles } from "../../agent/src/main.ts";

const ENV = { OUTPOST_ADDRESS: "https://outpost.example.com", OUTPOST_TOKEN: "op_agent_abc" };
const dir = mkdtempSync(path.join(tmpdir(), "outpost-vcs-tokens-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const target = path.join(dir, name);
  writeFileSync(target, text);
  return target;
}

function config(args: string[], env: Record<string, string> = {}): AgentConfig {
  const loaded = loadConfig(args, { ...ENV, ...env });
  if ("print" in loaded) {
    throw new Error("expected a configuration");
  }
  return loaded;
}

describe("agent VCS tokens", () => {
  it("has none unless configured", () => {
    expect(config([]).vcsTokens).toEqual([]);
  });

  it("binds OUTPOST_GITHUB_TOKEN to api.github.com and OUTPOST_GITLAB_TOKEN to gitlab.com", () => {
    expect(
      config([], { OUTPOST_GITHUB_TOKEN: "ghp_one", OUTPOST_GITLAB_TOKEN: "glpat-two" }).vcsTokens,
    ).toEqual([
      { host: "api.github.com", token: "ghp_one", file: null, variable: "OUTPOST_GITHUB_TOKEN" },
      { host: "gitlab.com", token: "glpat-two", file: null, variable: "OUTPOST_GITLAB_TOKEN" },
    ]);
  });

  it("reads token files for the hosts the flags name (github.com means its API host)", () => {
    const gh = file("gh", "ghp_file\n");
    const gl = file("gl", "glpat-file\n");
    const tokens = config([
      "--github-token-file",
      gh,
      "--github-host",
      "GitHub.Example.com",
      "--gitlab-token-file",
      gl,
      "--gitlab-host",
      "gitlab.internal:8443",
    ]).vcsTokens;
    expect(tokens).toEqual([
      { host: "github.example.com", token: "ghp_file", file: gh, variable: null },
      { host: "gitlab.internal:8443", token: "glpat-file", file: gl, variable: null },
    ]);
    expect(
      config([], { OUTPOST_GITHUB_TOKEN: "x", OUTPOST_GITHUB_HOST: "github.com" }).vcsTokens,
    ).toMatchObject([{ host: "api.github.com" }]);
  });

  it("takes one token file per host from the config file's vcsTokens", () => {
    const ghe = file("ghe", "ghp_ghe");
    const lab = file("lab", "glpat-lab");
    const conf = file(
      "agent.yaml",
      `vcsTokens:\n  github.example.com:\n    tokenFile: ${ghe}\n  gitlab.example.com:\n    tokenFile: ${lab}\n`,
    );
    const tokens = config(["--config", conf], { OUTPOST_GITHUB_TOKEN: "ghp_public" }).vcsTokens;
    expect(tokens.map((t) => [t.host, t.token, t.file])).toEqual([
      ["api.github.com", "ghp_public", null],
      ["github.example.com", "ghp_ghe", ghe],
      ["gitlab.example.com", "glpat-lab", lab],
    ]);
  });

  it.each([
    [
      ["--github-token-file", "/nonexistent/gh"],
      {},
      "--github-token-file /nonexistent/gh: cannot read the file (ENOENT)",
    ],
    [["--github-token-file", "EMPTY"], {}, "must hold one token on one line"],
    [
      ["--github-token-file", "GH"],
      { OUTPOST_GITHUB_TOKEN: "x" },
      "OUTPOST_GITHUB_TOKEN and --github-token-file are both set; keep one",
    ],
    [
      ["--github-host", "https://github.example.com"],
      { OUTPOST_GITHUB_TOKEN: "x" },
      "--github-host must be a host name such as github.example.com (no scheme or path)",
    ],
    [
      ["--config", "DUP"],
      { OUTPOST_GITHUB_TOKEN: "x" },
      "a token for api.github.com is configured twice; keep one",
    ],
    [["--config", "BADKEY"], {}, "vcsTokens.github.example.com.tokenFile"],
  ])("refuses %j %j: %s", (args, env, message) => {
    const files: Record<string, string> = {
      EMPTY: file("empty", "  \n"),
      GH: file("gh2", "ghp"),
      DUP: file(
        "dup.yaml",
        `vcsTokens:\n  github.com:\n    tokenFile: ${file("dup-token", "t")}\n`,
      ),
      BADKEY: file("badkey.yaml", "vcsTokens:\n  github.example.com:\n    token: inline\n"),
    };
    const resolved = args.map((a) => files[a] ?? a);
    expect(() => config(resolved, env)).toThrow(UserError);
    expect(() => config(resolved, env)).toThrow(message);
  });

  it("has the job sandbox hide every VCS token file, with the agent's token and config files", () => {
    const gh = file("hidden-gh", "ghp_hidden");
    const ghe = file("hidden-ghe", "ghp_ghe_hidden");
    const conf = file("hidden.yaml", `vcsTokens:\n  github.example.com:\n    tokenFile: ${ghe}\n`);
    const loaded = config(["--config", conf, "--github-token-file", gh]);
    expect(jobSecretFiles(loaded).sort()).toEqual([conf, gh, ghe].sort());
  });

  it("removes the token variables from the environment once read", () => {
    const env: NodeJS.ProcessEnv = {
      OUTPOST_GITHUB_TOKEN: "a",
      OUTPOST_GITLAB_TOKEN: "b",
      KEEP: "c",
    };
    forgetVcsTokens(env);
    expect(env).toEqual({ KEEP: "c" });
  });
});
