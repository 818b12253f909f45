/**
 * Pure helpers shared by the Worker (`src/`) and its Durable Objects (`durable/`): the `Result`
 * convention and prefixed ids. This package imports nothing (not even zod), which is what lets
 * `durable/` use it and still import only packages.
 */
export * from "./ids.ts";
export * from "./result.ts";
