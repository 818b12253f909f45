import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { TransientError } from "../../../agent/src/errors.ts";
import type { CoordinatorPort, JobArtifact } from "../../../agent/src/job/types.ts";
import type { LogSendResult } from "../../../agent/src/logs/streamer.ts";

/**
 * An in-memory coordinator for one run: configuration tarballs by URL, artifacts carried from
 * the plan job to the apply job, and a log per job with the agent API's offset rules (a chunk
 * at the wrong offset answers with the held length, like a 416).
 */
export class TestPort {
  readonly configurations = new Map<string, Buffer>();
  readonly artifacts = new Map<JobArtifact, Buffer>();
  readonly logs = new Map<string, Buffer>();
  /** The workspace's current state (Pulumi checkpoints), null before the first write. */
  state: Buffer | null = null;
  stateWrites = 0;
  /** Store the next chunk but answer with a transient error, as a lost response would. */
  loseNextLogAnswer = 0;

  /** The port bound to one job (each job has its own log). */
  forJob(jobId: string): CoordinatorPort {
    return {
      downloadConfiguration: async (url, dest) => {
        const data = this.configurations.get(url);
        if (!data) {
          throw new Error(`404 ${url}`);
        }
        await writeFile(dest, data);
      },
      uploadArtifact: async (name, file) => {
        this.artifacts.set(name, await readFile(file));
      },
      downloadArtifact: async (name, dest) => {
        const data = this.artifacts.get(name);
        if (!data) {
          return false;
        }
        await writeFile(dest, data);
        return true;
      },
      downloadState: async (_address, dest) => {
        if (this.state === null) {
          return false;
        }
        await writeFile(dest, this.state);
        return true;
      },
      uploadState: async (_address, file) => {
        this.state = await readFile(file);
        this.stateWrites += 1;
        return { stateVersionId: `sv_${this.stateWrites}` };
      },
      sendLogChunk: async (offset, bytes): Promise<LogSendResult> => {
        const held = this.logs.get(jobId) ?? Buffer.alloc(0);
        if (offset !== held.length) {
          return { rangeMismatch: held.length };
        }
        this.logs.set(jobId, Buffer.concat([held, bytes]));
        if (this.loseNextLogAnswer > 0) {
          this.loseNextLogAnswer -= 1;
          throw new TransientError("response lost");
        }
        return { ok: true };
      },
      renewWorkloadIdentity: async () => {
        throw new Error("this test port issues no workload identity");
      },
    };
  }

  /** The SHA-256 (hex) of a stored artifact, as the coordinator records it. */
  sha256(name: JobArtifact): string {
    return createHash("sha256")
      .update(this.artifacts.get(name) ?? Buffer.alloc(0))
      .digest("hex");
  }

  log(jobId: string): string {
    return this.logs.get(jobId)?.toString("utf8") ?? "";
  }
}
