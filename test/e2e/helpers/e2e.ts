/**
 * The coordinator's API as the end-to-end tests use it: workspaces, variables, uploads, runs and
 * their logs and state, and the waits on them (all `vi.waitFor`, bounded).
 */
import { expect, vi } from "vitest";
import { buildTarGz } from "../../node/helpers/tarball.ts";
import type { World } from "./world.ts";

/** The stand-in engine's version as the loopback mirror publishes it. */
export const ENGINE_VERSION = "1.9.5";

export type Json = Record<string, unknown>;
export type Answer = { status: number; body: Json; headers: Headers };

/** Awaits an API answer and returns its body, or throws with the body when the status differs. */
export async function expectStatus(answer: Promise<Answer>, status: number): Promise<Json> {
  const a = await answer;
  if (a.status !== status) {
    throw new Error(`expected ${status}, got ${a.status}: ${JSON.stringify(a.body)}`);
  }
  return a.body;
}

/** Creates an agent-mode workspace on the world's pool, with env variables for the stand-in. */
export async function createWorkspace(
  world: World,
  name: string,
  options: { autoApply?: boolean; env?: Record<string, string> } = {},
): Promise<string> {
  const ws = await expectStatus(
    world.api("POST", "/api/v1/workspaces", {
      name,
      engineVersion: ENGINE_VERSION,
      engine: "terraform",
      executionMode: "agent",
      poolId: world.poolId,
      autoApply: options.autoApply ?? false,
    }),
    201,
  );
  const id = String(ws.id);
  for (const [key, value] of Object.entries(options.env ?? {})) {
    await setVariable(world, id, key, value, { category: "env" });
  }
  return id;
}

export async function setVariable(
  world: World,
  workspaceId: string,
  key: string,
  value: string,
  options: { category: "env" | "terraform"; sensitive?: boolean },
): Promise<void> {
  const answer = await world.api("PUT", `/api/v1/workspaces/${workspaceId}/vars/${key}`, {
    value,
    category: options.category,
    sensitive: options.sensitive ?? false,
  });
  if (answer.status !== 201 && answer.status !== 200) {
    throw new Error(`variable ${key}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
}

/** Uploads a configuration made of `files` and returns its id. */
export async function uploadConfiguration(
  world: World,
  workspaceId: string,
  files: Record<string, string>,
): Promise<string> {
  const body = buildTarGz(Object.entries(files).map(([name, text]) => ({ name, body: text })));
  const res = await fetch(
    `${world.coordinator.url}/api/v1/workspaces/${workspaceId}/configuration-versions`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${world.ownerToken}`, "content-type": "application/gzip" },
      body,
    },
  );
  const answer = (await res.json()) as Json;
  if (res.status !== 201) {
    throw new Error(`upload answered ${res.status}: ${JSON.stringify(answer)}`);
  }
  return String(answer.id);
}

export async function queueRun(
  world: World,
  workspaceId: string,
  body: { operation?: "plan" | "apply" | "destroy" | "refresh"; isSpeculative?: boolean } = {},
): Promise<string> {
  const run = await expectStatus(
    world.api("POST", `/api/v1/workspaces/${workspaceId}/runs`, body),
    201,
  );
  return String(run.id);
}

/**
 * Waits (bounded by `timeoutMs`) until the run's status is one of `statuses` and returns the run;
 * fails naming its last status and reason otherwise.
 */
export async function waitForRun(
  world: World,
  runId: string,
  statuses: string[],
  timeoutMs = 30_000,
): Promise<Json> {
  return vi.waitFor(
    async () => {
      const run = await expectStatus(world.api("GET", `/api/v1/runs/${runId}`), 200);
      expect(
        statuses,
        `run ${runId} is ${String(run.status)} (${String(run.statusReason ?? run.waitingReason)})`,
      ).toContain(String(run.status));
      return run;
    },
    { timeout: timeoutMs, interval: 150 },
  );
}

/** The whole stored log of one phase. */
export async function readRunLog(world: World, runId: string, phase: "plan" | "apply") {
  const res = await fetch(
    `${world.coordinator.url}/api/v1/runs/${runId}/logs?phase=${phase}&offset=0`,
    { headers: { authorization: `Bearer ${world.ownerToken}` } },
  );
  return res.text();
}

export async function stateVersions(world: World, workspaceId: string): Promise<Json[]> {
  const body = await expectStatus(
    world.api("GET", `/api/v1/workspaces/${workspaceId}/state-versions`),
    200,
  );
  return body.stateVersions as Json[];
}

/** Waits (bounded) until the run's `phase` log contains `text` (a string) or matches it. */
export async function waitForLog(
  world: World,
  runId: string,
  phase: "plan" | "apply",
  text: string | RegExp,
  timeoutMs = 20_000,
): Promise<void> {
  const log = expect.poll(() => readRunLog(world, runId, phase), {
    timeout: timeoutMs,
    interval: 200,
    message: `the ${phase} log of ${runId}`,
  });
  await (typeof text === "string" ? log.toContain(text) : log.toMatch(text));
}

/** The workspace's runs, newest first, once there are at least `count` (bounded). */
export async function runsOf(world: World, workspaceId: string, count: number): Promise<Json[]> {
  return vi.waitFor(
    async () => {
      const body = await expectStatus(
        world.api("GET", `/api/v1/workspaces/${workspaceId}/runs`),
        200,
      );
      const runs = body.runs as Json[];
      expect(runs.length, `runs of ${workspaceId}`).toBeGreaterThanOrEqual(count);
      return runs;
    },
    { timeout: 15_000, interval: 100 },
  );
}
