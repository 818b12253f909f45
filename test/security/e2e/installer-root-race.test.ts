/**
 * Issue 25, finding 2: install.sh gave the agent user `$prefix/lib`, and root, rerunning it (the
 * documented upgrade), downloaded, chmod-ed and ran `node lib/outpost-agent.mjs --version` in
 * that directory: a process of the agent user swapped the file in between and its code ran as
 * uid 0. Here root reruns the real served install.sh while a real process of the agent user
 * (`nobody`) swaps the file as fast as it can, and plants a symbolic link to a file of root's;
 * the installer must run only what it verified, in its own staging directory, and follow no link.
 *
 * It needs root (to be root and to run a process as another user), as the attack does; without
 * it the tests are reported as skipped.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import agentPackage from "../../../agent/package.json" with { type: "json" };
import { useWorld } from "../../e2e/helpers/world.ts";

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

const world = useWorld();
let base = "";
let script = "";
const hostile: ChildProcess[] = [];

/** Runs install.sh as this (root) process with only Node and the base system on PATH. */
function install(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "sh",
      [script, ...args],
      {
        env: { PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, HOME: base },
        timeout: 120_000,
      },
      (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
    );
  });
}

/**
 * The agent user's attack: for at most 60 s (or 30 000 rounds), rename `evil` over
 * `lib/outpost-agent.mjs` again and again, so whatever root runs there is the attacker's.
 */
function swapForever(lib: string, evil: string): ChildProcess {
  const loop = `i=0; while [ $i -lt 30000 ]; do cp "$1" "$2/.swap" && mv -f "$2/.swap" "$2/outpost-agent.mjs"; i=$((i+1)); done`;
  const child = spawn("timeout", ["60", "sh", "-c", loop, "swap", evil, lib], {
    uid: NOBODY,
    gid: NOBODY,
    env: { PATH: "/usr/bin:/bin" },
    stdio: "ignore",
  });
  hostile.push(child);
  return child;
}

beforeAll(async () => {
  // Only root may write here (and /tmp above it is sticky), as the installer demands.
  base = mkdtempSync(path.join(tmpdir(), "outpost-root-install-"));
  chmodSync(base, 0o755);
  script = path.join(base, "install.sh");
  writeFileSync(script, await (await fetch(`${world.coordinator.url}/agent/v1/install.sh`)).text());
}, 120_000);

afterAll(() => {
  for (const child of hostile) {
    child.kill("SIGKILL");
  }
  rmSync(base, { recursive: true, force: true });
});

describe.runIf(isRoot)("root reruns install.sh while the agent user attacks lib/", () => {
  it("runs nothing of the agent user's as root, however often it swaps the file", async () => {
    const prefix = path.join(base, "opt");
    const first = await install(["--prefix", prefix, "--user", "nobody"]);
    expect(first.code, first.stderr).toBe(0);
    const lib = path.join(prefix, "lib");
    expect(statSync(lib).uid).toBe(NOBODY);

    // Written by the attacker's code only if it runs as root: nobody cannot write in `base`.
    const ranAsRoot = path.join(base, "attacker-ran-as-root");
    const evil = path.join(base, "evil.mjs");
    writeFileSync(
      evil,
      `import { writeFileSync } from "node:fs";\ntry { writeFileSync(${JSON.stringify(ranAsRoot)}, String(process.getuid())); } catch {}\nconsole.log(${JSON.stringify(agentPackage.version)});\n`,
    );
    chmodSync(evil, 0o644);
    const attack = swapForever(lib, evil);
    // The attack is under way (its file appeared) before root starts.
    await expect
      .poll(() => readFileSync(path.join(lib, "outpost-agent.mjs"), "utf8"))
      .toContain("attacker-ran-as-root");

    const rerun = await install(["--prefix", prefix, "--user", "nobody"]);
    expect(attack.exitCode, "the attack was still running during the install").toBeNull();
    attack.kill("SIGKILL");
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toContain(`installed outpost-agent ${agentPackage.version}`);
    expect(existsSync(ranAsRoot)).toBe(false);
    // The staging directory was root's, inside the root-owned prefix, and is gone.
    expect(statSync(prefix).uid).toBe(0);
    expect(lstatSync(path.join(prefix, "bin", "outpost-agent")).uid).toBe(0);
  });

  it("follows no symbolic link the agent user planted in lib/", async () => {
    const prefix = path.join(base, "opt-link");
    const first = await install(["--prefix", prefix, "--user", "nobody"]);
    expect(first.code, first.stderr).toBe(0);
    const lib = path.join(prefix, "lib");
    const precious = path.join(base, "root-only");
    writeFileSync(precious, "root's\n", { mode: 0o600 });
    // As the agent user: its file becomes a link to a file of root's.
    const planted = await new Promise<number | null>((resolve) => {
      const plant = 'rm -f "$1/outpost-agent.mjs" && ln -s "$2" "$1/outpost-agent.mjs"';
      spawn("sh", ["-c", plant, "plant", lib, precious], {
        uid: NOBODY,
        gid: NOBODY,
        env: { PATH: "/usr/bin:/bin" },
        stdio: "ignore",
      }).on("exit", resolve);
    });
    expect(planted).toBe(0);
    expect(lstatSync(path.join(lib, "outpost-agent.mjs")).isSymbolicLink()).toBe(true);

    const rerun = await install(["--prefix", prefix, "--user", "nobody"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(statSync(precious).mode & 0o7777).toBe(0o600);
    expect(statSync(precious).uid).toBe(0);
    expect(readFileSync(precious, "utf8")).toBe("root's\n");
    const agent = lstatSync(path.join(lib, "outpost-agent.mjs"));
    expect(agent.isFile()).toBe(true);
  });
});
