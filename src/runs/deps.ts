import type { Database } from "../db/client.ts";

/** What run code needs from the request or the scheduler: bindings and D1. */
export type Deps = { env: Env; db: Database };
