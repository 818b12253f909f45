/**
 * The end-to-end world's output on failure (test/e2e/helpers/failure-log.ts): the coordinator's
 * log and each process's output from where they stood when the test began, processes that said
 * nothing since left out, and nothing at all until a failure asks for it.
 */
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FailureLog } from "../e2e/helpers/failure-log.ts";
import { type AgentProcess, watch } from "../e2e/helpers/processes.ts";

/** A real process that prints each line it is sent on stdin back on stdout. */
function echoProcess(label: string): AgentProcess & { say(line: string): Promise<void> } {
  const child = spawn("cat", [], { stdio: ["pipe", "pipe", "pipe"] });
  const watched = watch(child, { label, dataDir: "/nonexistent", kill: (s) => child.kill(s) });
  return Object.assign(watched, {
    async say(line: string) {
      const before = watched.output().length;
      child.stdin.write(`${line}\n`);
      await vi.waitFor(() => expect(watched.output().length).toBeGreaterThan(before));
    },
  });
}

const printed = vi.spyOn(console, "log").mockImplementation(() => {});
afterEach(() => {
  printed.mockClear();
});

describe("the world's failure log", () => {
  it("prints nothing by itself, and everything so far when no test has begun", async () => {
    const log = new FailureLog();
    const agent = echoProcess("agent #1");
    await agent.say("registered");
    log.coordinator("error", "unhandled error\n");
    expect(printed).not.toHaveBeenCalled();
    log.print("the world did not start", [agent]);
    expect(printed).toHaveBeenCalledTimes(1);
    const text = String(printed.mock.calls[0]?.[0]);
    expect(text).toContain("the world did not start; output so far");
    expect(text).toContain("error: unhandled error");
    expect(text).toContain("--- agent #1, pid");
    expect(text).toContain("registered");
    agent.kill("SIGKILL");
  });

  it("prints only what came after the test began, leaving out processes that said nothing since", async () => {
    const log = new FailureLog();
    const quiet = echoProcess("agent #1");
    const talkative = echoProcess("agent #2");
    await quiet.say("before the test (quiet)");
    await talkative.say("before the test (talkative)");
    log.coordinator("info", "old line");
    log.markTestStart([quiet, talkative]);
    const late = echoProcess("agent #3");
    await talkative.say("during the test");
    await late.say("started during the test");
    log.coordinator("error", "new line");
    log.print('"x" failed', [quiet, talkative, late]);
    const text = String(printed.mock.calls[0]?.[0]);
    expect(text).toContain('"x" failed; output since the test began');
    expect(text).toContain("error: new line");
    expect(text).not.toContain("old line");
    expect(text).not.toContain("agent #1");
    expect(text).toContain("--- agent #2");
    expect(text).toContain("during the test");
    expect(text).not.toContain("before the test");
    expect(text).toContain("--- agent #3");
    expect(text).toContain("started during the test");
    for (const p of [quiet, talkative, late]) {
      p.kill("SIGKILL");
    }
  });

  it("keeps the newest 400 lines of the coordinator's log", () => {
    const log = new FailureLog();
    for (let i = 1; i <= 450; i++) {
      log.coordinator("info", `line ${i}`);
    }
    log.print("many lines", []);
    const lines = String(printed.mock.calls[0]?.[0]).split("\n");
    expect(lines).toContain("info: line 450");
    expect(lines).toContain("info: line 51");
    expect(lines).not.toContain("info: line 50");
  });
});
