import type { UserApi } from "./api.ts";
import type { Io } from "./output.ts";

/** Everything a command may touch; the bin wires it to the real process, tests to buffers. */
export type CliContext = Io & {
  env: NodeJS.ProcessEnv;
  /** Reads all of stdin (piped secrets), or null when stdin is a terminal. */
  readStdin(): Promise<string | null>;
  /** Reads one line from the terminal without echoing it; null when there is no terminal. */
  promptSecret(question: string): Promise<string | null>;
  /** The API with the saved (or environment) credentials; UsageError when not logged in. */
  api(): Promise<UserApi>;
  /** Calls `handler` on each Ctrl-C until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
  /** Ends the process at once (a second Ctrl-C). */
  exit(code: number): never;
};
