import { newApp } from "./app.ts";

const app = newApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
