/** Form handling for the dashboard: CSRF first, then zod on the remaining fields. */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Grants } from "../authz/model.ts";
import { ApiError } from "../errors.ts";
import { CATEGORIES, MAX_VALUE_LENGTH } from "../variables/model.ts";
import type { Viewer } from "./layout.tsx";
import { CSRF_FIELD, checkCsrf, type UiEnv } from "./session.ts";

/** Checkbox: present ("on") or absent. */
export const Checkbox = z
  .literal("on")
  .optional()
  .transform((v) => v === "on");

/** The dashboard's form for one variable, of a workspace or of a variable set. */
export const VariableFormFields = z.strictObject({
  key: z.string().min(1).max(128),
  value: z.string().max(MAX_VALUE_LENGTH).default(""),
  category: z.enum(CATEGORIES),
  description: z.string().max(500).default(""),
  sensitive: Checkbox,
  hcl: Checkbox,
});

export type FormBody = Record<string, string | File>;

const FORM_TYPES = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/**
 * Reads the body of a dashboard form: urlencoded or multipart, nothing else. A body of another
 * type, or one that does not parse (a malformed multipart body, a missing boundary), is refused
 * with 400 before anything happens; the size limit (413) applies before this.
 */
export async function readFormBody(c: Context): Promise<FormBody> {
  const type = c.req.header("content-type") ?? "";
  if (!FORM_TYPES.test(type)) {
    throw new ApiError(
      "BAD_REQUEST",
      "a form must be sent as application/x-www-form-urlencoded or multipart/form-data",
    );
  }
  try {
    return await c.req.parseBody();
  } catch (error) {
    // The size limit aborts the body read with its own 413; keep it.
    if (error instanceof ApiError) {
      throw error;
    }
    throw new ApiError("BAD_REQUEST", "the form body could not be read");
  }
}

/**
 * Reads a urlencoded or multipart form, refuses it (403) without the session's CSRF token, and
 * validates the other fields (400 naming the first bad one). Unknown fields are refused.
 */
export async function readForm<T extends z.ZodType>(
  c: Context<UiEnv>,
  schema: T,
): Promise<z.output<T>> {
  const body = await readFormBody(c);
  checkCsrf(c.var.session, body[CSRF_FIELD]);
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key !== CSRF_FIELD) {
      fields[key] = value;
    }
  }
  const parsed = schema.safeParse(fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "form";
    throw new ApiError("BAD_REQUEST", `${where}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

/**
 * What the layout needs to know about who is signed in; with `grants`, what they hold on the
 * workspace the page is about. `now` is the request's clock, for relative times.
 */
export function viewerOf(c: Context<UiEnv>, grants?: Grants): Viewer {
  const { principal, csrf } = c.var.session;
  const name =
    principal.kind === "user"
      ? principal.name
        ? `${principal.name} <${principal.email}>`
        : principal.email
      : principal.name;
  return { name, role: principal.role, csrf, grants, now: c.var.deps.now() };
}

/** Post/redirect/get: a fixed notice key, never free text, so no message can be reflected. */
export function redirectWithNotice(c: Context<UiEnv>, path: string, notice: string) {
  return c.redirect(`${path}?done=${encodeURIComponent(notice)}`, 303);
}

/** The notice text of a `done` key, or undefined for anything unknown. */
export function noticeText(c: Context<UiEnv>, notices: Record<string, string>): string | undefined {
  const key = c.req.query("done");
  return key && Object.hasOwn(notices, key) ? notices[key] : undefined;
}

/** The id path parameter, validated against its prefix (a malformed id is simply not found). */
export function idOf(c: Context<UiEnv>, name: string, prefix: string): string {
  const value = c.req.param(name) ?? "";
  if (!new RegExp(`^${prefix}_[a-z2-7]{26}$`).test(value)) {
    throw new ApiError("NOT_FOUND", `${prefix} ${value.slice(0, 40)} not found`);
  }
  return value;
}
