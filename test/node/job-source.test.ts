import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { extractConfiguration, resolveWorkingDirectory } from "../../agent/src/job/source.ts";
import { cloneAtCommit } from "../../agent/src/job/vcs.ts";
import { buildTarGz, type TarEntry } from "./helpers/tarball.ts";

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "outpost-source-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

async function extractEntries(
  entries: TarEntry[],
  options: { maxBytes?: number; sha?: string } = {},
) {
  const archive = path.join(root, "config.tar.gz");
  const data = buildTarGz(entries);
  writeFileSync(archive, data);
  const dest = path.join(root, "jobs", "job1", "config");
  const result = await extractConfiguration({
    archive,
    expectedSha256: options.sha ?? createHash("sha256").update(data).digest("hex"),
    dest,
    maxBytes: options.maxBytes ?? 1024 * 1024,
  });
  return { dest, ...result };
}

describe("extractConfiguration", () => {
  it("extracts files and directories of a well-formed archive", async () => {
    const { dest } = await extractEntries([
      { name: "main.tf", body: 'resource "x" "a" {}\n' },
      { name: "modules/", type: "5" },
      { name: "modules/net/main.tf", body: "# net\n" },
    ]);
    expect(readFileSync(path.join(dest, "main.tf"), "utf8")).toContain("resource");
    expect(readFileSync(path.join(dest, "modules/net/main.tf"), "utf8")).toBe("# net\n");
  });

  it("refuses an archive whose sha256 does not match", async () => {
    await expect(
      extractEntries([{ name: "main.tf", body: "x" }], { sha: "0".repeat(64) }),
    ).rejects.toThrow(/sha256 .* does not match/);
  });

  it("refuses ../ traversal and writes nothing outside", async () => {
    await expect(
      extractEntries([
        { name: "ok.tf", body: "x" },
        { name: "../../../evil.txt", body: "pwned" },
      ]),
    ).rejects.toThrow(/points outside the configuration/);
    expect(existsSync(path.join(root, "evil.txt"))).toBe(false);
    expect(existsSync(path.join(root, "jobs", "evil.txt"))).toBe(false);
  });

  it("refuses absolute paths", async () => {
    const target = path.join(root, "abs-evil.txt");
    await expect(extractEntries([{ name: target, body: "pwned" }])).rejects.toThrow(/outside/);
    expect(existsSync(target)).toBe(false);
  });

  it("drops symbolic and hard links, so nothing can be written through them", async () => {
    const outside = path.join(root, "outside");
    mkdirSync(outside);
    const { dest, droppedLinks } = await extractEntries([
      { name: "escape", type: "2", linkname: outside },
      { name: "escape/evil.txt", body: "pwned" },
      { name: "passwd", type: "1", linkname: "/etc/passwd" },
      { name: "main.tf", body: "ok" },
    ]);
    expect(droppedLinks).toEqual(["escape", "passwd"]);
    expect(existsSync(path.join(outside, "evil.txt"))).toBe(false);
    expect(existsSync(path.join(dest, "passwd"))).toBe(false);
    expect(readFileSync(path.join(dest, "main.tf"), "utf8")).toBe("ok");
  });

  it("refuses an archive that expands past the size cap", async () => {
    await expect(
      extractEntries([{ name: "big.bin", body: Buffer.alloc(5000, 1) }], { maxBytes: 4096 }),
    ).rejects.toThrow(/expands to more than 4096 bytes/);
  });

  it("refuses something that is not a tar.gz", async () => {
    const archive = path.join(root, "config.tar.gz");
    writeFileSync(
      archive,
      "definitely not a tarball, but long enough to be read as one block".repeat(20),
    );
    const sha = createHash("sha256").update(readFileSync(archive)).digest("hex");
    await expect(
      extractConfiguration({
        archive,
        expectedSha256: sha,
        dest: path.join(root, "d"),
        maxBytes: 1 << 20,
      }),
    ).rejects.toThrow(/cannot be extracted/);
  });
});

describe("resolveWorkingDirectory", () => {
  it("honours a working directory inside the configuration and refuses escapes", async () => {
    const config = path.join(root, "config");
    mkdirSync(path.join(config, "envs", "prod"), { recursive: true });
    writeFileSync(path.join(config, "file.tf"), "");
    symlinkSync(root, path.join(config, "link"));
    expect(await resolveWorkingDirectory(config, "")).toBe(config);
    expect(await resolveWorkingDirectory(config, "envs/prod")).toBe(path.join(config, "envs/prod"));
    await expect(resolveWorkingDirectory(config, "../")).rejects.toThrow(/outside/);
    await expect(resolveWorkingDirectory(config, "envs/../../x")).rejects.toThrow(/outside/);
    await expect(resolveWorkingDirectory(config, "/etc")).rejects.toThrow(/outside/);
    await expect(resolveWorkingDirectory(config, "link")).rejects.toThrow(/outside/);
    await expect(resolveWorkingDirectory(config, "missing")).rejects.toThrow(/does not exist/);
    await expect(resolveWorkingDirectory(config, "file.tf")).rejects.toThrow(/not a directory/);
  });
});

describe("cloneAtCommit", () => {
  function makeRepo(): { repo: string; first: string; second: string } {
    const repo = path.join(root, "repo");
    mkdirSync(repo);
    const git = (...args: string[]) =>
      execFileSync("git", args, {
        cwd: repo,
        env: {
          PATH: process.env.PATH,
          HOME: root,
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@t",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@t",
        },
      })
        .toString()
        .trim();
    git("init", "-q", "-b", "main");
    writeFileSync(path.join(repo, "main.tf"), "# first\n");
    git("add", ".");
    git("commit", "-qm", "first");
    const first = git("rev-parse", "HEAD");
    writeFileSync(path.join(repo, "main.tf"), "# second\n");
    git("commit", "-qam", "second");
    return { repo, first, second: git("rev-parse", "HEAD") };
  }

  it("checks out exactly the given commit", async () => {
    const { repo, first } = makeRepo();
    const dest = path.join(root, "clone");
    await cloneAtCommit({
      repoUrl: `file://${repo}`,
      commitSha: first,
      dest,
      allowFileRepos: true,
      hostEnv: process.env,
    });
    expect(readFileSync(path.join(dest, "main.tf"), "utf8")).toBe("# first\n");
  });

  it("refuses local repositories unless --allow-file-repos, and bad commit ids", async () => {
    const { repo, second } = makeRepo();
    const dest = path.join(root, "clone");
    await expect(
      cloneAtCommit({
        repoUrl: `file://${repo}`,
        commitSha: second,
        dest,
        allowFileRepos: false,
        hostEnv: process.env,
      }),
    ).rejects.toThrow(/--allow-file-repos/);
    await expect(
      cloneAtCommit({
        repoUrl: "ext::sh -c touch% /tmp/pwned",
        commitSha: second,
        dest,
        allowFileRepos: true,
        hostEnv: process.env,
      }),
    ).rejects.toThrow(/not https, http or ssh/);
    await expect(
      cloneAtCommit({
        repoUrl: `file://${repo}`,
        commitSha: "main",
        dest,
        allowFileRepos: true,
        hostEnv: process.env,
      }),
    ).rejects.toThrow(/not a full commit id/);
    await expect(
      cloneAtCommit({
        repoUrl: `file://${repo}`,
        commitSha: "f".repeat(40),
        dest: path.join(root, "c2"),
        allowFileRepos: true,
        hostEnv: process.env,
      }),
    ).rejects.toThrow(/git .* failed/);
  });
});
