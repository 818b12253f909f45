/**
 * Remote runs through the TFE API as the cloud backend drives them (`internal/cloud`
 * `backend_common.go` `uploadConfigurationVersion`, `backend_plan.go`): a configuration version,
 * the archive PUT to its upload URL without a token, a run on it, and its log streamed from the
 * log-read URL. Jobs move through the real pool object with {@link TestAgent}.
 */
import type { JobAssignment } from "@outpost/protocol";
import { expect } from "vitest";
import { request, workerFetch } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";
import { jobPath } from "./pools.ts";
import { runnableWorkspace } from "./runs.ts";
import { gzip, tar } from "./tarball.ts";
import { type Document, tfe } from "./tfe.ts";

export const MAIN_TF =
  'variable "region" {\n  default = "us"\n}\nresource "null_resource" "x" {}\n';

/** A workspace in agent mode on a fresh pool (with one configuration uploaded through v1). */
export async function tfeWorkspace(org: TestOrg, settings: Record<string, unknown> = {}) {
  return runnableWorkspace(org, settings);
}

/** `doForeignPUTRequest`: no Authorization header, an octet stream. */
export function foreignPut(url: unknown, body: Uint8Array | string): Promise<Response> {
  if (typeof url !== "string") {
    throw new Error(`no upload URL: ${String(url)}`);
  }
  return workerFetch(
    new Request(url, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body,
    }),
  );
}

/** The configuration archive of a directory holding `files`. */
export async function archive(files: Record<string, string> = { "main.tf": MAIN_TF }) {
  return gzip(tar(Object.entries(files).map(([name, body]) => ({ name, body }))));
}

/** Creates a configuration version as the CLI does (`auto-queue-runs` false). */
export async function createConfigurationVersion(
  token: string,
  workspaceId: string,
  attributes: Record<string, unknown> = { "auto-queue-runs": false, speculative: false },
) {
  const created = await tfe<Document>(`/workspaces/${workspaceId}/configuration-versions`, {
    method: "POST",
    token,
    body: { data: { type: "configuration-versions", attributes } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data;
}

/** A configuration version created and uploaded, as `terraform plan` does before its run. */
export async function uploadedVersion(
  token: string,
  workspaceId: string,
  options: { speculative?: boolean } = {},
): Promise<string> {
  const cv = await createConfigurationVersion(token, workspaceId, {
    "auto-queue-runs": false,
    speculative: options.speculative ?? false,
  });
  const put = await foreignPut(cv.attributes["upload-url"], await archive());
  expect(put.status, await put.clone().text()).toBe(200);
  return cv.id;
}

/** go-tfe's `Runs.Create` document. */
export function runDocument(
  workspaceId: string,
  configurationVersionId: string | null,
  attributes: Record<string, unknown> = {},
) {
  return {
    data: {
      type: "runs",
      attributes,
      relationships: {
        workspace: { data: { type: "workspaces", id: workspaceId } },
        ...(configurationVersionId
          ? {
              "configuration-version": {
                data: { type: "configuration-versions", id: configurationVersionId },
              },
            }
          : {}),
      },
    },
  };
}

/** Creates a run, expecting 201. */
export async function createTfeRun(
  token: string,
  workspaceId: string,
  configurationVersionId: string | null,
  attributes: Record<string, unknown> = {},
) {
  const res = await tfe<Document>("/runs", {
    method: "POST",
    token,
    body: runDocument(workspaceId, configurationVersionId, attributes),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** Reads a run (its status, actions, relationships). */
export async function readTfeRun(token: string, runId: string, include?: string) {
  const res = await tfe<Document & { included?: Document["data"][] }>(
    `/runs/${runId}${include ? `?include=${include}` : ""}`,
    { token },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Posts a run action; answers the response status. */
export async function tfeRunAction(token: string, runId: string, action: string) {
  return tfe<unknown>(`/runs/${runId}/actions/${action}`, { method: "POST", token });
}

/** Appends text to a leased job's log at `offset`, as the agent streams it. */
export async function appendLog(job: JobAssignment, offset: number, text: string) {
  const res = await request(
    `/agent/v1/jobs/${encodeURIComponent(job.jobId)}/leases/${job.leaseId}/logs?offset=${offset}`,
    {
      method: "PUT",
      token: job.runToken ?? "",
      body: new TextEncoder().encode(text),
      headers: { "content-type": "application/octet-stream" },
    },
  );
  expect(res.status, await res.clone().text()).toBe(200);
}

/** GETs a log-read URL with go-tfe's query (`limit`, `offset`), answering the raw bytes. */
export async function readLogUrl(url: string, offset: number, limit = 65_536) {
  const res = await workerFetch(new Request(`${url}?limit=${limit}&offset=${offset}`));
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

export { jobPath };
