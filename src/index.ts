import { newApp } from "./app.ts";

export { AgentPool } from "../durable/agent-pool.ts";
export { RunLog } from "../durable/run-log.ts";

const app = newApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
