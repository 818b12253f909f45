/**
 * The coordinator's base address, as both the agent and the `outpost` CLI take it: an http(s)
 * origin and nothing more. A path (`…/api/v1`), a query, a fragment or credentials are refused
 * with the fix, so the mistake is clear at once instead of a confusing 404 later.
 */
import { z } from "zod";

/** Why `text` is not a base address, with the fix, or null when it is one. */
export function baseAddressProblem(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an http(s) URL like https://outpost.example.com";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return "must be an http(s) URL like https://outpost.example.com";
  }
  const problem =
    url.username || url.password
      ? "holds credentials"
      : url.pathname !== "/"
        ? `has a path (${url.pathname})`
        : url.search
          ? `has a query (${url.search})`
          : url.hash
            ? `has a fragment (${url.hash})`
            : null;
  return problem === null
    ? null
    : `${text} ${problem}: give the coordinator's base URL, ${url.origin}`;
}

/** A zod transform for a base address: its origin (no trailing slash), or the issue. */
export function toBaseAddress(text: string, ctx: z.RefinementCtx): string {
  const problem = baseAddressProblem(text);
  if (problem !== null) {
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  }
  return new URL(text).origin;
}
