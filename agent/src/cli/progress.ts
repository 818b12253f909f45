/**
 * A spinner for long waits, on a terminal only: piped or redirected output (and CI, or
 * TERM=dumb) gets nothing extra. yocto-spinner redraws around whatever else is written to the
 * terminal meanwhile (the log), so callers need not pause it.
 */
import yoctoSpinner from "yocto-spinner";
import type { Io } from "./output.ts";

export type Progress = {
  /** Shows `text` beside the spinner (starting it on first use). */
  update(text: string): void;
  /** Removes the spinner line; safe to call more than once. */
  stop(): void;
};

/** Draws nothing: for waits that are not long (a single log read). */
export const NO_PROGRESS: Progress = { update() {}, stop() {} };

/** Whether `stream` is a terminal a spinner may draw on. */
export function isInteractive(stream: Io["err"], env: NodeJS.ProcessEnv): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true && env.TERM !== "dumb" && !("CI" in env);
}

/** A spinner on `stream` when it is a terminal, else one that draws nothing. */
export function progress(stream: Io["err"], env: NodeJS.ProcessEnv = process.env): Progress {
  if (!isInteractive(stream, env)) {
    return NO_PROGRESS;
  }
  const spinner = yoctoSpinner({
    stream: stream as NodeJS.WriteStream,
    // The CLI handles Ctrl-C itself (cancel the run, then stop following).
    handleSignals: false,
  });
  return {
    update(text) {
      spinner.text = text;
      if (!spinner.isSpinning) {
        spinner.start();
      }
    },
    stop() {
      if (spinner.isSpinning) {
        spinner.stop();
      }
    },
  };
}
