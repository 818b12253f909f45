/**
 * A run's `-var` values as the agent masks them: the job variable the coordinator makes of
 * one (`runJobVariable`) through the agent's masker, as `agent/src/job/runner.ts` builds it.
 */
import { describe, expect, it } from "vitest";
import { StreamMasker, secretVariants } from "../../agent/src/logs/masker.ts";
import { runJobVariable } from "../../src/runs/run-variable-job.ts";

function masked(expression: string, log: string): string {
  const variables = [runJobVariable({ key: "greeting", value: expression })];
  const masker = new StreamMasker(
    secretVariants(variables.filter((v) => v.isSensitive).map((v) => v.value)),
  );
  return Buffer.concat([masker.write(Buffer.from(log)), masker.end()]).toString();
}

describe("-var values in a job's log", () => {
  it("masks the bare value of a quoted string, printed with or without its quotes", () => {
    expect(masked('"hello-secret"', "greeting = hello-secret\n")).toBe("greeting = ***\n");
    expect(masked('"hello-secret"', 'greeting = "hello-secret"\n')).toBe('greeting = "***"\n');
    expect(masked('"tab\\there"', "value: tab\there\n")).toBe("value: ***\n");
  });

  it("masks another expression as its exact text", () => {
    expect(masked('["alpha-secret"]', 'sizes = ["alpha-secret"]\n')).toBe("sizes = ***\n");
  });
});
