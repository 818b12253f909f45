import { describe, expect, it } from "vitest";
import {
  decideTriggers,
  filesConcern,
  type PullRequestEvent,
  type PushEvent,
  pathMatches,
  repoKey,
  sameRepository,
  type TriggerWorkspace,
} from "../../src/vcs/model.ts";

const ws = (over: Partial<TriggerWorkspace> = {}): TriggerWorkspace => ({
  id: "ws_a",
  name: "a",
  vcsRepoUrl: "https://git.example.com/platform/infra.git",
  vcsBranch: null,
  vcsTriggerPaths: null,
  workingDirectory: "",
  forkPullRequests: "refuse",
  ...over,
});

const push = (over: Partial<PushEvent> = {}): PushEvent => ({
  kind: "push",
  repoUrls: ["https://git.example.com/platform/infra.git"],
  defaultBranch: "main",
  branch: "main",
  commitSha: "a".repeat(40),
  isDeletion: false,
  changedFiles: ["main.tf"],
  author: null,
  commitMessage: null,
  ...over,
});

const pr = (over: Partial<PullRequestEvent> = {}): PullRequestEvent => ({
  kind: "pull_request",
  action: "plan",
  repoUrls: ["git@git.example.com:platform/infra.git"],
  defaultBranch: "main",
  baseBranch: "main",
  headBranch: "feature",
  commitSha: "b".repeat(40),
  number: 3,
  isFork: false,
  author: null,
  title: null,
  ...over,
});

describe("repoKey / sameRepository", () => {
  it.each([
    ["https://git.example.com/platform/infra.git", "git.example.com/platform/infra"],
    ["https://Git.Example.com/Platform/Infra/", "git.example.com/platform/infra"],
    ["git@git.example.com:platform/infra.git", "git.example.com/platform/infra"],
    ["ssh://git@git.example.com:2222/platform/infra.git", "git.example.com/platform/infra"],
    ["http://example.com/mike/diaspora.git", "example.com/mike/diaspora"],
    ["not a url", null],
    ["https://git.example.com/", null],
  ])("%s → %s", (url, key) => {
    expect(repoKey(url)).toBe(key);
  });

  it("compares any of the event's URLs with the configured one", () => {
    expect(
      sameRepository("git@github.com:acme/infra.git", [
        "https://github.com/acme/infra.git",
        "git@github.com:acme/infra.git",
      ]),
    ).toBe(true);
    expect(
      sameRepository("https://github.com/acme/infra2.git", ["https://github.com/acme/infra"]),
    ).toBe(false);
  });
});

describe("pathMatches", () => {
  it.each([
    ["modules", "modules/vpc/main.tf", true],
    ["modules/", "modules/vpc/main.tf", true],
    ["modules", "modules2/main.tf", false],
    ["envs/prod", "envs/prod", true],
    ["envs/*.tf", "envs/main.tf", true],
    ["envs/*.tf", "envs/sub/main.tf", false],
    ["envs/**/*.tf", "envs/sub/deep/main.tf", true],
    ["envs/**/*.tf", "envs/main.tf", true],
    ["**/*.tf", "x/y.tf", true],
    ["**/*.tf", "README.md", false],
    ["env?", "env1/main.tf", true],
    ["a.b", "aXb", false],
    ["", "anything", true],
  ])("%s vs %s → %s", (pattern, file, expected) => {
    expect(pathMatches(pattern, file)).toBe(expected);
  });
});

describe("filesConcern", () => {
  it("uses trigger paths when set, else the working directory; unknown files always concern", () => {
    const dir = ws({ workingDirectory: "envs/prod" });
    expect(filesConcern(dir, ["envs/prod/main.tf"])).toBe(true);
    expect(filesConcern(dir, ["modules/x.tf"])).toBe(false);
    expect(filesConcern(dir, [])).toBe(false);
    expect(filesConcern(dir, null)).toBe(true);
    const triggers = ws({ workingDirectory: "envs/prod", vcsTriggerPaths: ["modules"] });
    expect(filesConcern(triggers, ["modules/x.tf"])).toBe(true);
    expect(filesConcern(triggers, ["envs/prod/main.tf"])).toBe(false);
    expect(filesConcern(ws(), ["README.md"])).toBe(true);
  });
});

describe("decideTriggers", () => {
  const table: [string, PushEvent | PullRequestEvent, TriggerWorkspace, string][] = [
    ["push to the default branch", push(), ws(), "run"],
    ["push to another branch", push({ branch: "dev" }), ws(), "skip"],
    ["push to the workspace's branch", push({ branch: "dev" }), ws({ vcsBranch: "dev" }), "run"],
    ["deletion of the tracked branch", push({ isDeletion: true }), ws(), "skip"],
    ["push outside the working dir", push(), ws({ workingDirectory: "envs/a" }), "skip"],
    ["push without a default branch", push({ defaultBranch: null }), ws(), "skip"],
    ["PR into the tracked branch", pr(), ws(), "run"],
    ["PR into another branch", pr({ baseBranch: "dev" }), ws(), "skip"],
    ["fork PR, refused", pr({ isFork: true }), ws(), "skip"],
    [
      "fork PR, allowed",
      pr({ isFork: true }),
      ws({ forkPullRequests: "plan_without_secrets" }),
      "run",
    ],
    ["PR closed", pr({ action: "close" }), ws(), "cancel_only"],
    ["PR into the tracked branch, files elsewhere", pr(), ws({ workingDirectory: "x" }), "run"],
  ];
  it.each(table)("%s", (_name, event, workspace, action) => {
    expect(decideTriggers(event, [workspace])).toEqual([
      expect.objectContaining({ workspaceId: "ws_a", action }),
    ]);
  });

  it("leaves out workspaces of other repositories or without one", () => {
    const other = ws({ id: "ws_b", vcsRepoUrl: "https://git.example.com/platform/other.git" });
    const none = ws({ id: "ws_c", vcsRepoUrl: null });
    expect(decideTriggers(push(), [other, none])).toEqual([]);
  });

  it("marks fork runs so their leases withhold sensitive variables", () => {
    const [decision] = decideTriggers(pr({ isFork: true }), [
      ws({ forkPullRequests: "plan_without_secrets" }),
    ]);
    expect(decision).toEqual({ workspaceId: "ws_a", action: "run", isFork: true });
  });
});
