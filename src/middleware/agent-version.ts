/** The agent API's answers say which agent build this coordinator ships. */
import { AGENT_VERSION_HEADER } from "@outpost/protocol";
import type { MiddlewareHandler } from "hono";
import { shippedRelease } from "../agents/release.ts";
import type { AppEnv } from "../env.ts";

/**
 * Adds {@link AGENT_VERSION_HEADER} to every agent API answer, so running agents learn of a
 * newer build between jobs. A manifest that cannot be read leaves the header out.
 */
export function agentVersionHeader(): MiddlewareHandler<AppEnv> {
  return async function agentVersion(c, next) {
    await next();
    const release = await shippedRelease(c.env.ASSETS).catch(() => null);
    if (release === null) {
      return;
    }
    try {
      c.res.headers.set(AGENT_VERSION_HEADER, release.manifest.version);
    } catch {
      // A passed-through response has immutable headers: answer with a copy.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set(AGENT_VERSION_HEADER, release.manifest.version);
    }
  };
}
