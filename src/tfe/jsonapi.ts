/**
 * JSON:API documents as Terraform Cloud writes them (`application/vnd.api+json`): one resource
 * or a page of them with `meta.pagination`, and refusals as `errors`. Every `/api/v2` answer,
 * success or refusal, has this media type, because go-tfe decodes nothing else.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { handleError } from "../errors.ts";

export const JSONAPI = "application/vnd.api+json";

type Identifier = { id: string; type: string };
/** A to-one relationship (a resource or none) or a to-many one (a list, maybe empty). */
export type Relationship = { data: Identifier | Identifier[] | null };

/** One JSON:API resource object. */
export type Resource = {
  id: string;
  type: string;
  attributes: Record<string, unknown>;
  relationships?: Record<string, Relationship>;
  links?: Record<string, string>;
};

/** Terraform Cloud's page parameters: `page[number]` from 1, `page[size]` up to 100 (20). */
export const TfePageQuery = {
  "page[number]": z.coerce.number().int().min(1).max(10_000).default(1),
  "page[size]": z.coerce.number().int().min(1).max(100).default(20),
};

export type Pagination = { number: number; size: number; total: number };

/** The `meta.pagination` object of a page, with Terraform Cloud's member names. */
export function paginationMeta({ number, size, total }: Pagination) {
  const pages = Math.max(1, Math.ceil(total / size));
  return {
    pagination: {
      "current-page": number,
      "page-size": size,
      "prev-page": number > 1 ? number - 1 : null,
      "next-page": number < pages ? number + 1 : null,
      "total-pages": pages,
      "total-count": total,
    },
  };
}

/**
 * Page `page[number]` of `all` (a list read whole, then filtered) with its `meta`: what a
 * numbered list route answers around the resources it makes of `items`.
 */
export function pageOf<T>(
  all: readonly T[],
  query: { "page[number]": number; "page[size]": number },
) {
  const number = query["page[number]"];
  const size = query["page[size]"];
  return {
    items: all.slice((number - 1) * size, number * size),
    meta: paginationMeta({ number, size, total: all.length }),
  };
}

/** A relationship to one resource, or to none. */
export function related(type: string, id: string | null | undefined): Relationship {
  return { data: id ? { id, type } : null };
}

/** Answers one resource (or a page of them with its pagination) as a JSON:API document. */
export function sendDocument(
  c: Context,
  document: { data: Resource | Resource[] | null; meta?: unknown; included?: Resource[] },
  status: ContentfulStatusCode = 200,
): Response {
  return c.body(JSON.stringify(document), status, { "content-type": JSONAPI });
}

/** An empty answer (204) as Terraform Cloud gives for deletions and ping. */
export function sendEmpty(c: Context): Response {
  return c.body(null, 204);
}

type Envelope = {
  error: {
    code: string;
    message: string;
    requestId: string;
    issues?: { path: string; message: string }[];
  };
};

const TITLES: Record<number, string> = {
  400: "bad request",
  401: "unauthorized",
  403: "forbidden",
  404: "not found",
  409: "conflict",
  413: "payload too large",
  415: "unsupported media type",
  423: "locked",
  429: "too many requests",
  500: "internal server error",
  503: "service unavailable",
};

/**
 * The `/api/v2` onError: the app's own error mapping (codes, statuses, headers, 500 logging),
 * rewritten as JSON:API `errors` with the Outpost code, the sentence as `detail`, the request
 * id and any field issues in `meta`.
 */
export async function jsonApiError(err: Error, c: Context): Promise<Response> {
  const answer = handleError(err, c);
  const { error } = (await answer.json()) as Envelope;
  const status = String(answer.status);
  const body = {
    errors: [
      {
        status,
        code: error.code,
        title: TITLES[answer.status] ?? error.code.toLowerCase(),
        detail: error.message,
        meta: { requestId: error.requestId, ...(error.issues ? { issues: error.issues } : {}) },
      },
    ],
  };
  const headers = new Headers(answer.headers);
  headers.set("content-type", JSONAPI);
  return new Response(JSON.stringify(body), { status: answer.status, headers });
}

/**
 * The OpenAPI entry of a success: a JSON:API document, whose shape is Terraform Cloud's (left
 * undescribed here; the attribute names are in docs/terraform-cli.md).
 */
export function documentResponse(description: string) {
  return { description: `${description} (${JSONAPI})` } as const;
}

const ErrorsDocument = z
  .object({
    errors: z.array(
      z.object({
        status: z.string(),
        code: z.string(),
        title: z.string(),
        detail: z.string(),
        meta: z.looseObject({ requestId: z.string() }),
      }),
    ),
  })
  .openapi("JsonApiErrors");

/** OpenAPI entries for the JSON:API refusals a route can answer. */
export function errorDocuments(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: TITLES[status] ?? "error",
        content: { [JSONAPI]: { schema: ErrorsDocument } },
      },
    ]),
  );
}

/** A request body in a JSON:API document (`{ data: { type, attributes, relationships } }`). */
export function documentBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { [JSONAPI]: { schema } } } as const;
}
