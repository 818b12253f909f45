/** The CLI wired to the real process: stdio, environment, Ctrl-C and exit codes. */
import { createInterface } from "node:readline";
import { UserApi } from "./api.ts";
import { loadCredentials } from "./config-store.ts";
import type { CliContext } from "./context.ts";
import { CLI_EXIT, describeCliError } from "./errors.ts";
import { runCli } from "./main.ts";

/** Runs `outpost` with `argv` and exits the process with the command's exit code. */
export async function main(argv: string[]): Promise<never> {
  const interruptHandlers = new Set<() => void>();
  process.on("SIGINT", () => {
    if (interruptHandlers.size === 0) {
      process.exit(CLI_EXIT.interrupted);
    }
    for (const handler of interruptHandlers) {
      handler();
    }
  });
  try {
    process.exit(await runCli(processContext(interruptHandlers), argv));
  } catch (error) {
    const { exitCode, text } = describeCliError(
      error,
      process.env.OUTPOST_TOKEN ? "environment" : "login",
    );
    process.stderr.write(`${text}\n`);
    process.exit(exitCode);
  }
}

function processContext(interruptHandlers: Set<() => void>): CliContext {
  return {
    out: process.stdout,
    err: process.stderr,
    env: process.env,
    async readStdin() {
      if (process.stdin.isTTY) {
        return null;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) {
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
      return Buffer.concat(chunks).toString("utf8");
    },
    async promptSecret(question) {
      if (!process.stdin.isTTY) {
        return null;
      }
      process.stderr.write(question);
      const rl = createInterface({ input: process.stdin, terminal: true });
      // Echo nothing while the secret is typed.
      (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = () => {};
      const answer = await new Promise<string>((resolve) => rl.question("", resolve));
      rl.close();
      process.stderr.write("\n");
      return answer;
    },
    async api() {
      return new UserApi(await loadCredentials(process.env));
    },
    onInterrupt(handler) {
      interruptHandlers.add(handler);
      return () => interruptHandlers.delete(handler);
    },
    exit(code) {
      process.exit(code);
    },
  };
}
