/**
 * Sandboxed jobs see their tools, end to end: the real coordinator, the real agent under
 * `--isolation bwrap`, run by a user whose tools live in its home, as a new team's do: the
 * engine is a wrapper script in `~/bin` that runs `terraform-real` from `~/.local/bin`, a Node
 * script whose `node` is nvm's (`~/.nvm/versions/node/v22.0.0/bin/node`). Nothing else on the
 * agent's PATH has node or terraform. A command the sandbox does hide (a tool inside the data
 * directory) fails the job with which command, where it looked and why it was hidden.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { standinSource } from "../node/helpers/mirror.ts";
import {
  createWorkspace,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { exitWithin, writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld();
let base: string;
let home: string;
let agentPath: string;

function executable(file: string, text: string | Buffer): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o755 });
}

beforeAll(() => {
  // Outside /tmp, which the sandbox replaces: what is hidden is hidden by the agent's rules.
  base = mkdtempSync(path.join("/var/tmp", "outpost-sandbox-path-"));
  home = path.join(base, "home");
  const nvm = path.join(home, ".nvm/versions/node/v22.0.0/bin");
  mkdirSync(nvm, { recursive: true });
  symlinkSync(process.execPath, path.join(nvm, "node"));
  executable(path.join(home, "bin/terraform"), '#!/bin/sh\nexec terraform-real "$@"\n');
  executable(path.join(home, ".local/bin/terraform-real"), standinSource("1.9.5"));
  // The agent needs bubblewrap from PATH; nothing there has node or terraform.
  mkdirSync(path.join(base, "tools"));
  symlinkSync("/usr/bin/bwrap", path.join(base, "tools/bwrap"));
  agentPath = [
    path.join(home, "bin"),
    path.join(home, ".local/bin"),
    nvm,
    path.join(base, "tools"),
  ].join(":");
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** One plan by a `--single --isolation bwrap` agent of this user, with `extraPath` first. */
async function planAsUser(name: string, options: { extraPath?: string; hook?: string } = {}) {
  const dataDir = path.join(home, `.local/share/outpost-agent-${name}`);
  if (options.hook !== undefined) {
    writeHook(dataDir, "pre-plan", options.hook);
  }
  const ws = await createWorkspace(world, name);
  await uploadConfiguration(world, ws, { "main.tf": 'resource "terraform_data" "a" {}\n' });
  const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
  const agent = world.startAgent({
    dataDir,
    args: ["--single", "--isolation", "bwrap"],
    env: {
      HOME: home,
      PATH: [options.extraPath, agentPath].filter((p) => p !== undefined).join(":"),
    },
  });
  const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
  await exitWithin(agent, 30_000);
  return { run, log: await readRunLog(world, runId, "plan"), dataDir };
}

describe("a sandboxed job's PATH", () => {
  it("runs an engine wrapper from ~/bin whose engine and node are in the agent user's home", async () => {
    const { run, log } = await planAsUser("tools-in-home");
    expect(run.status, log).toBe("planned_and_finished");
    expect(log).toContain(`Using terraform 1.9.5 found at ${home}/bin/terraform`);
    expect(log).toContain("isolation bwrap");
    expect(log).toContain("Plan: 1 to add");
  });

  it("fails a command it hides with which command, where the job looked and why", async () => {
    const toolDir = path.join(home, ".local/share/outpost-agent-hidden-tool/bin");
    executable(path.join(toolDir, "fetch-credentials"), "#!/bin/sh\necho secret\n");
    const { run, log, dataDir } = await planAsUser("hidden-tool", {
      extraPath: toolDir,
      hook: "fetch-credentials",
    });
    expect(run.status).toBe("errored");
    const reason = String(run.statusReason);
    expect(reason).toContain(
      "hook pre-plan failed: it exited with code 127; command not found: fetch-credentials; the job's PATH is ",
    );
    expect(reason).toContain(
      `the host has it at ${toolDir}/fetch-credentials, but the sandbox hides it: ${toolDir}/fetch-credentials is inside the agent's data directory (${dataDir})`,
    );
    expect(log).toContain(
      `Outpost agent: the sandbox hides ${toolDir}, a directory of the job's PATH: inside the agent's data directory`,
    );
    expect(log).toMatch(/fetch-credentials: not found/);
  });
});
