/**
 * Keyset paging for list routes: `?limit=N&cursor=…` in, `{ …, nextCursor }` out. A cursor is
 * the sort key of the last row served, opaque to clients (base64url JSON), so a page never
 * repeats or skips rows when others are inserted meanwhile.
 */
import { z } from "@hono/zod-openapi";
import { ok } from "@outpost/common";
import { invalidInput, type Outcome } from "./reason.ts";

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export const PageQuery = z.strictObject({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .openapi({ param: { name: "limit", in: "query" }, example: DEFAULT_PAGE_SIZE }),
  cursor: z
    .string()
    .max(1000)
    .regex(/^[A-Za-z0-9_-]+$/, "must be a nextCursor from a previous page")
    .optional()
    .openapi({ param: { name: "cursor", in: "query" } }),
});

/** Encodes a sort key as an opaque cursor. */
export function encodeCursor(key: readonly (string | number)[]): string {
  const bytes = new TextEncoder().encode(JSON.stringify(key));
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/**
 * Decodes a cursor made by {@link encodeCursor} whose key must match `shape` (the type of each
 * element). Anything else is refused as `invalid`, so a forged cursor is bad input, not a 500.
 */
export function decodeCursor<const T extends readonly ("string" | "number")[]>(
  cursor: string,
  shape: T,
): Outcome<{ [K in keyof T]: T[K] extends "string" ? string : number }, "invalid"> {
  const invalid = invalidInput(
    "query.cursor",
    "must be a nextCursor from a previous page",
    "invalid cursor",
  );
  let parsed: unknown;
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    parsed = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    return invalid;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== shape.length ||
    parsed.some((value, i) => typeof value !== shape[i])
  ) {
    return invalid;
  }
  return ok(parsed as { [K in keyof T]: T[K] extends "string" ? string : number });
}

/** Splits a `limit + 1` query result into the page and the cursor of the next one. */
export function takePage<T>(
  rows: T[],
  limit: number,
  keyOf: (row: T) => readonly (string | number)[],
): { items: T[]; nextCursor: string | null } {
  if (rows.length <= limit) {
    return { items: rows, nextCursor: null };
  }
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: last === undefined ? null : encodeCursor(keyOf(last)) };
}
