/**
 * The agent token leaves the agent's own environment once read: not only `process.env` but the
 * initial environment block the kernel shows in `/proc/<pid>/environ`, which any process of the
 * same user (a job on an agent without a sandbox) can read.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { eraseInitialEnvironment } from "../../agent/src/exec/environ.ts";

const BIN = path.resolve("agent/src/bin/outpost-agent.ts");
const ENVIRON = path.resolve("agent/src/exec/environ.ts");
const TOKEN = "op_agent_EnvironTest0123456789_-abc";
const dir = mkdtempSync(path.join(tmpdir(), "outpost-environ-"));
const started: ChildProcess[] = [];

afterAll(() => {
  for (const child of started) {
    child.kill("SIGKILL");
  }
  rmSync(dir, { recursive: true, force: true });
});

function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
}

describe("eraseInitialEnvironment", () => {
  it("blanks the value in /proc/self/environ and leaves every other variable as it was", () => {
    const script = `
      import { readFileSync } from "node:fs";
      import { eraseInitialEnvironment } from ${JSON.stringify(ENVIRON)};
      const before = readFileSync("/proc/self/environ", "utf8");
      delete process.env.SECRET_ONE;
      const result = eraseInitialEnvironment(["SECRET_ONE", "NOT_SET"]);
      const after = readFileSync("/proc/self/environ", "utf8");
      console.log(JSON.stringify({ result, before, after, kept: process.env.KEEP_ME }));
    `;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { PATH: process.env.PATH ?? "", SECRET_ONE: TOKEN, KEEP_ME: "kept=value" },
      encoding: "utf8",
    });
    expect(out.stderr).toBe("");
    const { result, before, after, kept } = JSON.parse(out.stdout) as Record<string, unknown>;
    expect(result).toEqual({ erased: ["SECRET_ONE"] });
    expect(before).toContain(`SECRET_ONE=${TOKEN}`);
    expect(after).not.toContain(TOKEN);
    expect(String(after).split("\0")).toContain("SECRET_ONE=");
    // Same length: nothing after it moved.
    expect(String(after)).toHaveLength(String(before).length);
    expect(String(after).split("\0")).toContain("KEEP_ME=kept=value");
    expect(kept).toBe("kept=value");
  });

  it("says it cannot where there is no /proc/self/mem", () => {
    expect(eraseInitialEnvironment(["X"], "darwin")).toEqual({
      erased: [],
      unsupported: "no /proc/self/mem on darwin",
    });
  });
});

describe("the real agent", () => {
  it("shows no token in /proc/<its pid>/environ while it runs", async () => {
    const port = await closedPort();
    const agent = spawn(process.execPath, [BIN, "--data-dir", dir, "--isolation", "none"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        OUTPOST_ADDRESS: `http://127.0.0.1:${port}`,
        OUTPOST_TOKEN: TOKEN,
        TFC_AGENT_TOKEN: TOKEN,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    started.push(agent);
    let output = "";
    agent.stdout?.on("data", (d) => {
      output += d;
    });
    agent.stderr?.on("data", (d) => {
      output += d;
    });
    // Running and past its start: it retries the unreachable coordinator.
    await expect.poll(() => output, { timeout: 20_000 }).toContain("lost contact");
    const pid = agent.pid ?? 0;
    const environ = environOf(pid);
    expect(environ.join("\n")).not.toContain(TOKEN);
    expect(environ).toContain("OUTPOST_TOKEN=");
    expect(environ).toContain("TFC_AGENT_TOKEN=");
    expect(environ).toContain(`OUTPOST_ADDRESS=http://127.0.0.1:${port}`);
    expect(output).not.toContain("could not erase");
    agent.kill("SIGKILL");
  });
});

/** A loopback port nothing listens on (taken and released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}
