/** Requests to the TFE API (`/api/v2`) as go-tfe sends them, and its documents. */
import { env } from "cloudflare:workers";
import { requestJson } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";

export const JSONAPI = "application/vnd.api+json";

export type Resource = {
  id: string;
  type: string;
  attributes: Record<string, unknown>;
  relationships?: Record<string, { data: { id: string; type: string } | null }>;
};
export type Document = {
  data: Resource;
};
export type ListDocument = {
  data: Resource[];
  meta: { pagination: Record<string, number | null> };
};
export type ErrorsDocument = {
  errors: {
    status: string;
    code: string;
    title: string;
    detail: string;
    meta: { requestId: string };
  }[];
};

/** The organization's name, which TFE paths use instead of its id. */
export async function orgName(org: TestOrg): Promise<string> {
  const row = await env.DB.prepare("SELECT name FROM organizations WHERE id = ?")
    .bind(org.orgId)
    .first<{ name: string }>();
  if (!row) {
    throw new Error("the organization is missing");
  }
  return row.name;
}

/** A TFE API request with go-tfe's headers; a body is sent as a JSON:API document. */
export function tfe<T>(
  path: string,
  options: { method?: string; token?: string | null; body?: unknown } = {},
) {
  return requestJson<T>(`/api/v2${path}`, {
    method: options.method ?? "GET",
    token: options.token ?? null,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    headers: {
      accept: JSONAPI,
      ...(options.body === undefined ? {} : { "content-type": JSONAPI }),
    },
  });
}

/** The create/update document of a workspace with these attributes. */
export function workspaceDocument(attributes: Record<string, unknown>, relationships?: unknown) {
  return { data: { type: "workspaces", attributes, ...(relationships ? { relationships } : {}) } };
}
