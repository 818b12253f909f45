/** An outage of the coordinator is logged once when it starts and once when it ends. */
import { describe, expect, it } from "vitest";
import { ContactMonitor } from "../../agent/src/client/contact.ts";
import { createLogger } from "../../agent/src/logger.ts";

function monitor() {
  const lines: Array<Record<string, unknown>> = [];
  let now = 0;
  const logger = createLogger({
    level: "info",
    json: true,
    destination: { write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return {
    lines,
    contact: new ContactMonitor(logger, () => now),
    advance: (ms: number) => (now += ms),
  };
}

describe("ContactMonitor", () => {
  it("logs the first failure with its cause, stays quiet during the outage, and logs its end", () => {
    const { lines, contact, advance } = monitor();
    contact.succeeded();
    expect(lines).toEqual([]);
    contact.failed("POST /agent/v1/jobs/next: cannot reach http://c (connection refused)");
    for (let i = 0; i < 5; i++) {
      advance(2_000);
      contact.failed("still refused");
    }
    expect(contact.isDown).toBe(true);
    advance(1_500);
    contact.succeeded();
    contact.succeeded();
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, "lost contact with the coordinator; retrying with backoff"],
      [30, "contact with the coordinator restored"],
    ]);
    expect(lines[0]?.err).toBe(
      "POST /agent/v1/jobs/next: cannot reach http://c (connection refused)",
    );
    expect(lines[1]).toMatchObject({ downSeconds: 11.5, failedRequests: 6 });
    contact.failed("again");
    expect(lines).toHaveLength(3);
  });
});
