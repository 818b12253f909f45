/** The Hono environment of the Worker: bindings from wrangler.toml and per-request variables. */

import type { Principal } from "./authz/principal.ts";
import type { Database } from "./db/client.ts";
import type { Deps } from "./deps.ts";

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** The request's bindings, D1 and clock (`buildDeps`). */
    deps: Deps;
    /** `deps.db`, which most routes need alone. */
    db: Database;
    /** Set by the auth middleware; absent on public routes. */
    principal: Principal;
  };
};
