/**
 * VCS webhooks in tests: hooks made through the API, GitHub's own example payloads
 * (`@octokit/webhooks-examples`) signed with `@octokit/webhooks-methods`, GitLab's documented
 * examples from `test/fixtures/gitlab/`, and deliveries sent through the app with an execution
 * context that the test waits on, so the runs queued in `waitUntil` exist when it returns.
 */
import examples from "@octokit/webhooks-examples";
import { sign } from "@octokit/webhooks-methods";
import { expect } from "vitest";
import gitlabMergeRequest from "../../fixtures/gitlab/merge-request.json";
import gitlabPush from "../../fixtures/gitlab/push.json";
import { BASE, requestJson, workerFetchAndWait } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";

export type HookBody = {
  id: string;
  provider: string;
  repoUrl: string | null;
  url: string;
  secret?: string;
  previousSecretExpiresAt: string | null;
  [field: string]: unknown;
};

export type Json = Record<string, unknown>;

/** A deep copy of GitHub's example payload for `event` whose `pick` returns true. */
export function githubExample(event: string, pick: (p: Json) => boolean = () => true): Json {
  const definition = examples.find((d) => d.name === event);
  const found = (definition?.examples as unknown as Json[] | undefined)?.find(pick);
  if (!found) {
    throw new Error(`no GitHub example for ${event}`);
  }
  return structuredClone(found);
}

/** Deep copies of GitLab's documented push and merge request examples. */
export function gitlabExample(kind: "push" | "merge_request"): Json {
  return structuredClone((kind === "push" ? gitlabPush : gitlabMergeRequest) as unknown as Json);
}

/** Creates a hook as the org's admin; the answer carries its one-time secret. */
export async function createHook(
  org: TestOrg,
  provider: "github" | "gitlab",
  repoUrl: string | null = null,
): Promise<HookBody & { secret: string }> {
  const res = await requestJson<HookBody & { secret: string }>("/api/v1/vcs-hooks", {
    method: "POST",
    token: org.tokens.admin,
    body: { provider, repoUrl, description: "test hook" },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export type Delivery = { status: number; body: Json };

/** Sends a delivery through the app and waits for the work it queued in `waitUntil`. */
export async function deliver(
  path: string,
  headers: Record<string, string>,
  body: string | Uint8Array,
): Promise<Delivery> {
  const res = await workerFetchAndWait(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    }),
  );
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

let deliveries = 0;

/** A GitHub delivery of `payload`, signed with `secret` unless a signature is given. */
export async function deliverGitHub(
  hook: { id: string },
  event: string,
  payload: Json | string,
  options: { secret: string; deliveryId?: string; signature?: string },
): Promise<Delivery> {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  return deliver(
    `/webhooks/github/${hook.id}`,
    {
      "x-github-event": event,
      "x-github-delivery": options.deliveryId ?? `gh-delivery-${deliveries++}-${Date.now()}`,
      "x-hub-signature-256": options.signature ?? (await sign(options.secret, body)),
      "user-agent": "GitHub-Hookshot/test",
    },
    body,
  );
}

/** A GitLab delivery of `payload` with `token` as `X-Gitlab-Token`. */
export function deliverGitLab(
  hook: { id: string },
  event: string,
  payload: Json | string,
  options: { token: string; headers?: Record<string, string> },
): Promise<Delivery> {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  return deliver(
    `/webhooks/gitlab/${hook.id}`,
    {
      "x-gitlab-event": event,
      "x-gitlab-token": options.token,
      "x-gitlab-event-uuid": `gl-uuid-${deliveries++}-${Date.now()}`,
      ...options.headers,
    },
    body,
  );
}

/** A random 40-hex commit id. */
export function randomSha(): string {
  return [...crypto.getRandomValues(new Uint8Array(20))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}
