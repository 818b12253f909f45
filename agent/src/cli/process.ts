#!/usr/bin/env node
import { createInterface } from "node:readline";
import { UserApi } from "../src/cli/api.ts";
import { loadCredentials } from "../src/cli/config-store.ts";
import type { CliContext } from "../src/cli/context.ts";
import { CLI_EXIT, describeCliError } from "../src/cli/errors.ts";
import { runCli } from "../src/cli/main.ts";

const interruptHandlers = new Set<() => void>();
process.on("SIGINT", () => {
  if (interruptHandlers.size === 0) {
    process.exit(CLI_EXIT.interrupted);
  }
  for (const handler of interruptHandlers) {
    handler();
  }
});

const ctx: CliContext = {
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

try {
  process.exit(await runCli(ctx, process.argv.slice(2)));
} catch (error) {
  const { exitCode, text } = describeCliError(error);
  process.stderr.write(`${text}\n`);
  process.exit(exitCode);
}
