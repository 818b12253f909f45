import { readFileSync } from "node:fs";
import path from "node:path";

/** Set by the build (agent/scripts/build.ts); absent when the agent runs from its sources. */
declare const OUTPOST_AGENT_VERSION: string | undefined;

/**
 * The version of this agent: what the build stamped into the bundle, or `agent/package.json`'s
 * when running from the sources. Sent at registration, in the User-Agent and by `--version`.
 */
export const AGENT_VERSION: string =
  typeof OUTPOST_AGENT_VERSION === "string" ? OUTPOST_AGENT_VERSION : sourceVersion();

/** True in the built single-file agent, the only form that can update itself. */
export const IS_BUILT: boolean = typeof OUTPOST_AGENT_VERSION === "string";

function sourceVersion(): string {
  const file = path.join(import.meta.dirname, "..", "package.json");
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (typeof parsed === "object" && parsed !== null && "version" in parsed) {
    return String(parsed.version);
  }
  throw new Error(`${file} has no version`);
}
