import { newApp } from "./app.ts";

export { RunLog } from "../durable/run-log.ts";

const app = newApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
