/**
 * Workload identity renewal through the real coordinator and the real agent: a workspace whose
 * tokens live 60 s (the minimum) runs a plan whose pre-plan hook watches the token file; the agent
 * rewrites it at two thirds of the lifetime with a fresh token (another `jti`, a later `exp`) from
 * `POST /agent/v1/jobs/:jobId/workload-identity`, and stops with the job (its directory is gone).
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld();

/** The claims of a JWT payload segment (base64url JSON). */
function claims(segment: string): { jti: string; iat: number; exp: number } {
  return JSON.parse(Buffer.from(segment, "base64url").toString());
}

it("rewrites the job's token file with a fresh token before it expires", async () => {
  const workspaceId = await createWorkspace(world, "identity-renewal");
  await expectStatus(
    world.api("PATCH", `/api/v1/workspaces/${workspaceId}`, {
      workloadIdentity: true,
      workloadIdentityTokenLifetimeSeconds: 60,
    }),
    200,
  );
  await uploadConfiguration(world, workspaceId, { "main.tf": 'resource "null_resource" "a" {}\n' });
  const dataDir = world.freshDir("identity-renewal");
  // Prints the payloads (not whole tokens, which the log masks) of the first token and of the
  // one the file holds once it changed, waiting up to 55 s for the change.
  writeHook(
    dataDir,
    "pre-plan",
    [
      'f="$OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE"',
      'first=$(cat "$f")',
      "i=0",
      'while [ "$(cat "$f")" = "$first" ] && [ $i -lt 55 ]; do sleep 1; i=$((i+1)); done',
      'echo "first-payload: $(printf %s "$first" | cut -d. -f2)"',
      'echo "now-payload: $(cut -d. -f2 "$f") after $i s"',
      'echo "file-mode: $(stat -c %a "$f")"',
    ].join("\n"),
  );
  const agent = world.startAgent({ dataDir, args: ["--hook-timeout", "120"] });
  await agent.waitForOutput(/registered/);

  const runId = await queueRun(world, workspaceId);
  await waitForRun(world, runId, ["planned", "planned_and_finished", "applied"], 150_000);
  const log = await readRunLog(world, runId, "plan");
  expect(log).toContain("Outpost agent: workload identity token renewed");
  const first = claims(/first-payload: (\S+)/.exec(log)?.[1] ?? "");
  const now = /now-payload: (\S+) after (\d+) s/.exec(log);
  const renewed = claims(now?.[1] ?? "");
  expect(renewed.jti).not.toBe(first.jti);
  expect(renewed.exp).toBeGreaterThan(first.exp);
  expect(renewed.exp - renewed.iat).toBe(60);
  // Two thirds of 60 s after the token arrived; the hook started a little after that.
  expect(Number(now?.[2])).toBeLessThan(55);
  expect(log).toContain("file-mode: 600");
  // The job is over: its directory, token file included, is gone, and nothing writes it again.
  expect(readdirSync(path.join(dataDir, "jobs"))).toEqual([]);
}, 240_000);
