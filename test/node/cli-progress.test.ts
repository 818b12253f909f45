/**
 * The CLI's spinner: drawn on a terminal, nothing at all when the output is piped, in CI, or
 * with TERM=dumb.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { progress } from "../../agent/src/cli/progress.ts";

/** A stream that records what is written; with `isTTY`, the cursor methods a tty.WriteStream has. */
class Capture extends Writable {
  text = "";
  isTTY: boolean;
  columns = 80;
  constructor(isTTY: boolean) {
    super();
    this.isTTY = isTTY;
  }
  override _write(chunk: Buffer, _encoding: string, done: () => void) {
    this.text += chunk.toString();
    done();
  }
  cursorTo(x: number): boolean {
    this.text += `\u001b[${x + 1}G`;
    return true;
  }
  moveCursor(_dx: number, dy: number): boolean {
    this.text += dy < 0 ? `\u001b[${-dy}A` : "";
    return true;
  }
  clearLine(): boolean {
    this.text += "\u001b[2K";
    return true;
  }
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("progress", () => {
  it("draws a spinner with the text on a terminal and clears it on stop", async () => {
    vi.stubEnv("CI", undefined);
    vi.stubEnv("TERM", "xterm-256color");
    const terminal = new Capture(true);
    const spinner = progress(terminal, process.env);
    spinner.update("plan queued (3 s)");
    spinner.update("planning (4 s)");
    await new Promise((resolve) => setImmediate(resolve));
    spinner.stop();
    expect(terminal.text).toContain("plan queued (3 s)");
    expect(terminal.text).toContain("planning (4 s)");
    // The line is erased at the end (cursor to column 0, clear line), leaving no text behind.
    expect(
      terminal.text.endsWith("\u001b[2K") || terminal.text.includes("\u001b[2K\u001b[1G"),
    ).toBe(true);
  });

  it("writes nothing when piped, in CI or on a dumb terminal", () => {
    const cases: [Capture, NodeJS.ProcessEnv][] = [
      [new Capture(false), { TERM: "xterm" }],
      [new Capture(true), { TERM: "xterm", CI: "true" }],
      [new Capture(true), { TERM: "dumb" }],
    ];
    for (const [stream, env] of cases) {
      const spinner = progress(stream, env);
      spinner.update("waiting");
      spinner.stop();
      expect(stream.text).toBe("");
    }
  });
});
