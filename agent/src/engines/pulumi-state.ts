/**
 * The stack's checkpoint between Outpost and Pulumi's DIY `file://` backend in the job dir
 * (`.pulumi/meta.yaml`, `.pulumi/stacks/<project>/<stack>.json`, the layout Pulumi itself
 * writes), and the project's name from `Pulumi.yaml`.
 *
 * A checkpoint is stored by Outpost exactly as Pulumi wrote it plus two top-level members the
 * state history needs and Pulumi ignores: `serial` (one more per apply) and `lineage` (fixed
 * for the workspace's history). So versions list, download and roll back like Terraform states.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parse as parseYaml } from "yaml";

/** Outpost's bookkeeping read from a restored checkpoint (none before the first apply). */
export type CheckpointHistory = { serial: number; lineage: string } | null;

/** The project name in `Pulumi.yaml` (or `Pulumi.yml`) of `workDir`; throws with why not. */
export async function readProjectName(workDir: string): Promise<string> {
  for (const name of ["Pulumi.yaml", "Pulumi.yml"]) {
    let text: string;
    try {
      text = await readFile(path.join(workDir, name), "utf8");
    } catch {
      continue;
    }
    const project: unknown = parseYaml(text);
    const value =
      typeof project === "object" && project !== null && "name" in project ? project.name : null;
    if (typeof value !== "string" || !/^[A-Za-z0-9_.-]{1,100}$/.test(value)) {
      throw new Error(`${name} has no valid project name`);
    }
    return value;
  }
  throw new Error(
    "the working directory has no Pulumi.yaml; set the workspace's workingDirectory to the Pulumi project",
  );
}

/** Where the DIY backend keeps the stack file inside `backendDir`. */
export function stackFile(backendDir: string, project: string, stack: string): string {
  return path.join(backendDir, ".pulumi", "stacks", project, `${stack}.json`);
}

/**
 * Lays out an empty project-scoped DIY backend (`meta.yaml` version 1) and, when `checkpoint`
 * is given, puts it in place as the stack's file. Answers the history it carried.
 */
export async function restoreCheckpoint(input: {
  backendDir: string;
  project: string;
  stack: string;
  checkpoint: Buffer | null;
}): Promise<CheckpointHistory> {
  const file = stackFile(input.backendDir, input.project, input.stack);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(path.join(input.backendDir, ".pulumi", "meta.yaml"), "version: 1\n");
  if (input.checkpoint === null) {
    return null;
  }
  const parsed: unknown = JSON.parse(input.checkpoint.toString("utf8"));
  if (typeof parsed !== "object" || parsed === null || !("checkpoint" in parsed)) {
    throw new Error(
      "the workspace's current state is not a Pulumi checkpoint; was it written by Terraform?",
    );
  }
  await writeFile(file, input.checkpoint, { mode: 0o600 });
  const { serial, lineage } = parsed as { serial?: unknown; lineage?: unknown };
  return typeof serial === "number" && typeof lineage === "string" ? { serial, lineage } : null;
}

/**
 * The stack file Pulumi left, with the next `serial` and the history's `lineage` added, as
 * the body of the next state version; null when Pulumi wrote none.
 */
export async function checkpointForUpload(
  file: string,
  history: CheckpointHistory,
): Promise<Buffer | null> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return null;
  }
  const checkpoint = JSON.parse(text) as Record<string, unknown>;
  const next = {
    ...checkpoint,
    serial: (history?.serial ?? 0) + 1,
    lineage: history?.lineage ?? randomUUID(),
  };
  return Buffer.from(`${JSON.stringify(next, null, 4)}\n`);
}
