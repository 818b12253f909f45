/**
 * `--isolation`: how `auto`, `bwrap` and `none` are decided at start, through the real agent bin
 * on a host whose PATH has no bubblewrap, and through the probe on this host (which has it).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { probeBubblewrap, resolveIsolation } from "../../agent/src/exec/sandbox.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";

const BIN = path.resolve("agent/src/bin/outpost-agent.ts");
const dir = mkdtempSync(path.join(tmpdir(), "outpost-isolation-"));
const NO_BWRAP_PATH = path.join(dir, "empty-bin");
const env = {
  HOME: dir,
  PATH: NO_BWRAP_PATH,
  OUTPOST_ADDRESS: "http://127.0.0.1:9",
  OUTPOST_TOKEN: "op_agent_isolation-test-token",
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the agent's start without bubblewrap", () => {
  it("--isolation bwrap refuses to start, saying why", () => {
    const result = spawnSync(process.execPath, [BIN, "--data-dir", dir, "--isolation", "bwrap"], {
      env,
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(result.status).toBe(EXIT_CODES.badConfig);
    expect(result.stderr.trim()).toBe(
      "outpost-agent: --isolation bwrap: job sandboxes cannot be built: bubblewrap (bwrap) is not installed: install the bubblewrap package",
    );
  });

  it("auto runs without a sandbox and warns once at start, naming the risk", async () => {
    const agent = spawn(process.execPath, [BIN, "--data-dir", dir, "--log-json"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    agent.stdout?.on("data", (d) => {
      output += d;
    });
    try {
      // Past its start: it retries the unreachable coordinator.
      await expect.poll(() => output, { timeout: 20_000 }).toContain("lost contact");
      const lines = output
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const warnings = lines.filter((l) => String(l.msg).includes("WITHOUT a sandbox"));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, isolation: "none" });
      expect(String(warnings[0]?.msg)).toContain("can read this agent's token");
      expect(String(warnings[0]?.reason)).toContain("bubblewrap (bwrap) is not installed");
      expect(lines.find((l) => l.msg === "outpost-agent starting")).toMatchObject({
        isolation: "none",
      });
    } finally {
      agent.kill("SIGKILL");
    }
  });

  it("--isolation none starts without a sandbox and without the warning", async () => {
    const agent = spawn(process.execPath, [BIN, "--data-dir", dir, "--isolation", "none"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    agent.stdout?.on("data", (d) => {
      output += d;
    });
    try {
      await expect.poll(() => output, { timeout: 20_000 }).toContain("lost contact");
      expect(output).toMatch(/"isolation":"none"/);
      expect(output).not.toContain("WITHOUT a sandbox");
    } finally {
      agent.kill("SIGKILL");
    }
  });
});

describe("resolveIsolation", () => {
  it("uses bubblewrap for auto and bwrap when the probe passes on this host", async () => {
    const probe = await probeBubblewrap();
    expect(probe).toMatchObject({ ok: true });
    expect(await resolveIsolation("auto")).toMatchObject({ mode: "bwrap" });
    expect(await resolveIsolation("bwrap")).toMatchObject({ mode: "bwrap" });
    expect(await resolveIsolation("none")).toEqual({ mode: "none", unavailable: null });
  });

  it("says what to fix when the probe fails", async () => {
    expect(await probeBubblewrap("/usr/bin", "darwin")).toEqual({
      ok: false,
      reason: "bubblewrap sandboxes need Linux; this host runs darwin",
    });
    const refused = async () => ({ ok: false as const, reason: "setting up uid map: denied" });
    expect(await resolveIsolation("auto", refused)).toEqual({
      mode: "none",
      unavailable: "setting up uid map: denied",
    });
    await expect(resolveIsolation("bwrap", refused)).rejects.toThrow(
      "--isolation bwrap: job sandboxes cannot be built: setting up uid map: denied",
    );
  });
});
