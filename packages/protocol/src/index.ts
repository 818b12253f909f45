/** The wire contract shared by the Worker and the Node agent. */
export * from "./address.ts";
export * from "./agent.ts";
export * from "./engine-version.ts";
export * from "./errors.ts";
export * from "./feedback.ts";
export * from "./jobs.ts";
export * from "./release.ts";
export * from "./runs.ts";
export * from "./state-resources.ts";
