/**
 * What the plan comment reads from R2: the changed resources from the plan's JSON the plan job
 * stored (`plan.json`: Terraform's `show -json`, Pulumi's preview), and the last lines of a
 * failed job's log as stored (the agent masked it before sending). Reads are bounded, so a huge
 * plan or log costs the Worker little; what cannot be read is left out of the comment.
 */
import type { Deps } from "../deps.ts";
import { artifactKey, logKey, type RunRef } from "../runs/blobs.ts";
import { type ResourceChanges, resourceChangesOf } from "./comment.ts";

/** A plan JSON larger than this is not parsed for the comment (the run page still has it). */
export const MAX_PLAN_JSON_BYTES = 8 * 1024 * 1024;
/** How much of the log's end is read, and how many of its last lines are shown. */
const LOG_TAIL_BYTES = 16 * 1024;
export const LOG_TAIL_LINES = 40;
/** Terminal colour codes an engine may print: noise in a comment. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

/** The plan's changed resources by action, or null (no plan JSON, too large, not readable). */
export async function planResources(deps: Deps, run: RunRef): Promise<ResourceChanges | null> {
  const object = await deps.env.BLOBS.get(artifactKey(run, "plan.json"));
  if (object === null) {
    return null;
  }
  if (object.size > MAX_PLAN_JSON_BYTES) {
    await object.body.cancel();
    return null;
  }
  try {
    return resourceChangesOf(JSON.parse(await object.text()));
  } catch {
    return null;
  }
}

/**
 * The last {@link LOG_TAIL_LINES} lines of the run's failed job: the apply's log when the run
 * got that far, else the plan's. Null when neither is stored.
 */
export async function logTail(deps: Deps, run: RunRef): Promise<string | null> {
  for (const phase of ["apply", "plan"] as const) {
    const object = await deps.env.BLOBS.get(logKey(run, phase), {
      range: { suffix: LOG_TAIL_BYTES },
    });
    if (object === null) {
      continue;
    }
    const text = (await object.text()).replace(ANSI_ESCAPE, "");
    const lines = text.replace(/\s+$/, "").split("\n");
    // A read that starts mid-file starts mid-line: that first piece is dropped.
    const whole = object.size > LOG_TAIL_BYTES ? lines.slice(1) : lines;
    return whole.slice(-LOG_TAIL_LINES).join("\n");
  }
  return null;
}
