/** The Hono environment of the Worker: bindings from wrangler.toml and per-request variables. */

import type { Principal } from "./authz/principal.ts";
import type { Database } from "./db/client.ts";

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    db: Database;
    /** Set by the auth middleware; absent on public routes. */
    principal: Principal;
  };
};
