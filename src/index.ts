// The clock imports nothing; the Worker comes next, so the app imports @hono/zod-openapi (which
// gives zod its `.openapi()`) before anything builds a schema of @outpost/protocol.
import { systemClock } from "./lib/clock.ts";
import { newWorker } from "./worker.ts";

export { AgentPool } from "../durable/agent-pool.ts";
export { RunLog } from "../durable/run-log.ts";

export default newWorker(systemClock);
