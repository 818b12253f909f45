/**
 * What the world prints when a test fails: the coordinator's own log (its `console` calls, kept
 * in memory, the newest lines) and each process's output, both from where they stood when the
 * test began. Nothing is printed for a passing test.
 */
import type { AgentProcess } from "./processes.ts";

/** Lines of the coordinator's log kept (the newest). */
const KEPT_LINES = 400;

export class FailureLog {
  private readonly lines: string[] = [];
  /** Every line ever logged, kept or not. */
  private logged = 0;
  private testStart: { logged: number; outputs: Map<AgentProcess, number> } | null = null;

  /** Records one line of the coordinator's log. */
  coordinator(level: string, message: string): void {
    this.logged += 1;
    this.lines.push(`${level}: ${message.trimEnd()}`);
    if (this.lines.length > KEPT_LINES) {
      this.lines.shift();
    }
  }

  /** Marks where the logs stand as a test begins. */
  markTestStart(processes: readonly AgentProcess[]): void {
    this.testStart = {
      logged: this.logged,
      outputs: new Map(processes.map((p) => [p, p.output().length])),
    };
  }

  /**
   * Prints what the coordinator logged and each process printed since the current test began
   * (everything when no test has begun). Processes that printed nothing since are left out.
   */
  print(reason: string, processes: readonly AgentProcess[]): void {
    const start = this.testStart;
    const count = Math.min(this.logged - (start?.logged ?? 0), this.lines.length);
    const sections = [
      `--- ${reason}; output ${start ? "since the test began" : "so far"} ---`,
      "--- the coordinator's log ---",
      this.lines.slice(this.lines.length - count).join("\n") || "(nothing)",
    ];
    for (const p of processes) {
      const output = p.output().slice(start?.outputs.get(p) ?? 0);
      if (output !== "" || !start?.outputs.has(p)) {
        sections.push(`--- ${p.label}, pid ${p.child.pid ?? "?"} ---`, output || "(nothing)");
      }
    }
    console.log(sections.join("\n"));
  }
}
