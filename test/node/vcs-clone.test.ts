/**
 * The agent's clone of a pull request commit from a server that refuses to serve unadvertised
 * commits by id (git protocol v0 without `uploadpack.allowReachableSHA1InWant`, as some
 * self-hosted servers are configured): the fallback must fetch pull/merge request heads too,
 * since a fork's commits are reachable only from there.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cloneAtCommit } from "../../agent/src/job/vcs.ts";

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "outpost-vcs-clone-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: root,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t",
    },
  })
    .toString()
    .trim();
}

/** A bare repository whose `ref` holds two commits on top of main; returns the middle one. */
function repoWithCommitOnlyUnder(ref: string): { bare: string; middle: string } {
  const bare = path.join(root, "bare.git");
  const work = path.join(root, "work");
  mkdirSync(bare);
  mkdirSync(work);
  git(bare, "init", "-q", "--bare", "-b", "main");
  git(work, "init", "-q", "-b", "main");
  writeFileSync(path.join(work, "main.tf"), "# main\n");
  git(work, "add", ".");
  git(work, "commit", "-qm", "main");
  git(work, "push", "-q", bare, "main");
  writeFileSync(path.join(work, "main.tf"), "# middle\n");
  git(work, "commit", "-qam", "middle");
  const middle = git(work, "rev-parse", "HEAD");
  writeFileSync(path.join(work, "main.tf"), "# tip\n");
  git(work, "commit", "-qam", "tip");
  git(work, "push", "-q", bare, `HEAD:${ref}`);
  return { bare, middle };
}

// Protocol v0 makes upload-pack refuse wants that are not advertised tips.
const strictServerEnv = {
  ...process.env,
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: "protocol.version",
  GIT_CONFIG_VALUE_0: "0",
};

describe("cloneAtCommit from a server that refuses unadvertised commits", () => {
  it.each(["refs/pull/7/head", "refs/merge-requests/7/head"])(
    "finds a commit reachable only from %s",
    async (ref) => {
      const { bare, middle } = repoWithCommitOnlyUnder(ref);
      const dest = path.join(root, "clone");
      await cloneAtCommit({
        repoUrl: `file://${bare}`,
        commitSha: middle,
        dest,
        allowFileRepos: true,
        hostEnv: strictServerEnv,
      });
      expect(readFileSync(path.join(dest, "main.tf"), "utf8")).toBe("# middle\n");
      expect(git(dest, "rev-parse", "HEAD")).toBe(middle);
    },
  );
});
