import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import {
  LOG_LENGTH_HEADER,
  LogAppendResponse,
  SHA256_HEADER,
  type ArtifactName as WireArtifactName,
} from "@outpost/protocol";
import { z } from "zod";
import { TransientError } from "../errors.ts";
import type { CoordinatorPort, JobArtifact } from "../job/types.ts";
import type { LogSendResult } from "../logs/streamer.ts";
import { describeNetworkError } from "../net/errors.ts";
import type { HttpResponse } from "../net/fetch.ts";
import { type ContactMonitor, observed } from "./contact.ts";
import { type HttpTarget, ProtocolError, readJson, segment, send as sendRequest } from "./http.ts";

/** The runner's artifact names as the agent API spells them. */
export const WIRE_ARTIFACT_NAMES: Record<JobArtifact, WireArtifactName> = {
  "plan-file": "plan.tfplan",
  "lock-file": "terraform.lock.hcl",
  "plan-json": "plan.json",
  "stack-settings": "pulumi-stack.yaml",
};

/** Transfers of configurations and artifacts may be large; a stuck one still ends. */
const TRANSFER_TIMEOUT_MS = 30 * 60_000;
const DISK_ERRORS = new Set(["ENOSPC", "EACCES", "EROFS", "EDQUOT", "EMFILE"]);

/** The path of a job's configuration tarball on the agent API. */
export function configurationPath(jobId: string): string {
  return `/agent/v1/jobs/${segment(jobId)}/configuration`;
}

/**
 * The {@link CoordinatorPort} of one job and lease, authenticated with the job's per-run token.
 * Network errors, 429 and 5xx reject with TransientError (the runner retries them); a lost lease
 * (409) or a run that ended (401, its token died) reject with CoordinatorError.
 */
export function jobPort(options: {
  target: HttpTarget;
  jobId: string;
  leaseId: string;
  runToken: string;
  /** Told of every answer and transient failure, so an outage is logged once for the agent. */
  contact?: Pick<ContactMonitor, "failed" | "succeeded">;
}): CoordinatorPort {
  const { jobId, leaseId, runToken } = options;
  const target = options.target;
  const send: typeof sendRequest = (t, input) =>
    observed(options.contact, () => sendRequest(t, input));
  const token = runToken;
  return {
    async downloadConfiguration(url, destFile) {
      // The run token goes only to the coordinator it came from.
      if (!url.startsWith(`${target.address}/`)) {
        throw new Error(`refusing to send the run token to ${url}`);
      }
      await download(send, target, { path: url.slice(target.address.length), token }, destFile);
    },
    async uploadArtifact(name, file) {
      // Buffered: the route needs Content-Length, and plan artefacts are capped at 100 MiB.
      const body = await readFile(file);
      // The coordinator checks and records it; the apply job verifies the plan file against it.
      const sha256 = createHash("sha256").update(body).digest("hex");
      await send(target, {
        method: "PUT",
        path: `/agent/v1/jobs/${segment(jobId)}/artifacts/${WIRE_ARTIFACT_NAMES[name]}`,
        token,
        headers: { "content-type": "application/octet-stream", [SHA256_HEADER]: sha256 },
        body,
        timeoutMs: TRANSFER_TIMEOUT_MS,
      }).then((res) => res.body?.cancel());
    },
    async downloadArtifact(name, destFile) {
      const res = await send(target, {
        method: "GET",
        path: `/agent/v1/jobs/${segment(jobId)}/artifacts/${WIRE_ARTIFACT_NAMES[name]}`,
        token,
        timeoutMs: TRANSFER_TIMEOUT_MS,
        passStatuses: [404],
      });
      if (res.status === 404) {
        await res.body?.cancel();
        return false;
      }
      await writeBody(res, destFile);
      return true;
    },
    async downloadState(stateAddress, destFile) {
      const res = await send(target, {
        method: "GET",
        path: coordinatorPath(target, stateAddress),
        token,
        timeoutMs: TRANSFER_TIMEOUT_MS,
        passStatuses: [204],
      });
      if (res.status === 204) {
        await res.body?.cancel();
        return false;
      }
      await writeBody(res, destFile);
      return true;
    },
    async uploadState(stateAddress, file) {
      const res = await send(target, {
        method: "POST",
        path: coordinatorPath(target, stateAddress),
        token,
        headers: { "content-type": "application/json" },
        body: await readFile(file),
        timeoutMs: TRANSFER_TIMEOUT_MS,
      });
      return readJson(res, StateWritten, "state upload");
    },
    async renewWorkloadIdentity() {
      const res = await send(target, {
        method: "POST",
        path: `/agent/v1/jobs/${segment(jobId)}/workload-identity`,
        token,
      });
      return readJson(res, WorkloadIdentityToken, "workload identity renewal");
    },
    async sendLogChunk(offset, bytes): Promise<LogSendResult> {
      const res = await send(target, {
        method: "PUT",
        path: `/agent/v1/jobs/${segment(jobId)}/leases/${segment(leaseId)}/logs?offset=${offset}`,
        token,
        headers: { "content-type": "application/octet-stream" },
        body: bytes,
        passStatuses: [416],
      });
      if (res.status === 416) {
        await res.body?.cancel();
        const held = Number(res.headers.get(LOG_LENGTH_HEADER));
        if (!Number.isSafeInteger(held) || held < 0) {
          throw new ProtocolError(`log append answered 416 without a valid ${LOG_LENGTH_HEADER}`);
        }
        return { rangeMismatch: held };
      }
      await readJson(res, LogAppendResponse, "log append");
      return { ok: true };
    },
  };
}

/** What the coordinator answers to a workload identity renewal. */
const WorkloadIdentityToken = z.object({ token: z.string().min(1), expiresAt: z.string() });

/** What the state backend answers to an accepted write. */
const StateWritten = z.object({ stateVersionId: z.string() });

/** The path of `url` on the coordinator; the run token goes nowhere else. */
function coordinatorPath(target: HttpTarget, url: string): string {
  if (!url.startsWith(`${target.address}/`)) {
    throw new Error(`refusing to send the run token to ${url}`);
  }
  return url.slice(target.address.length);
}

async function download(
  send: typeof sendRequest,
  target: HttpTarget,
  input: { path: string; token: string },
  destFile: string,
): Promise<void> {
  const res = await send(target, {
    method: "GET",
    path: input.path,
    token: input.token,
    timeoutMs: TRANSFER_TIMEOUT_MS,
  });
  await writeBody(res, destFile);
}

/** Streams a response body to a file; a connection cut midway is transient (and the file goes). */
async function writeBody(res: HttpResponse, destFile: string): Promise<void> {
  if (!res.body) {
    throw new ProtocolError("the coordinator answered without a body");
  }
  try {
    await pipeline(
      Readable.fromWeb(res.body as WebReadableStream<Uint8Array>),
      createWriteStream(destFile),
    );
  } catch (error) {
    await rm(destFile, { force: true });
    const code = error instanceof Error && "code" in error ? String(error.code) : "";
    // A full or read-only disk is the agent host's problem; retrying the download won't help.
    if (DISK_ERRORS.has(code)) {
      throw error;
    }
    throw new TransientError(`download cut off (${describeNetworkError(error)})`, { cause: error });
  }
}
