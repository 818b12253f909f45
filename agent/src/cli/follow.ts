import { LOG_COMPLETE_HEADER, LOG_NEXT_OFFSET_HEADER } from "@outpost/protocol";
import { retry } from "../retry.ts";
import { sleep } from "../sleep.ts";
import { must, seg, type UserApi } from "./api.ts";
import { CLI_EXIT, type CliExitCode } from "./errors.ts";
import type { Run } from "./models.ts";
import type { Io } from "./output.ts";

/** How often a follower asks again while nothing new arrived. */
const POLL_MS = 500;
/** A follower gives up after the coordinator was unreachable this long. */
const GIVE_UP_AFTER_MS = 5 * 60_000;

/** Retries `fn` through transient failures (a coordinator restart) for up to five minutes. */
function patiently<T>(fn: () => Promise<T>): Promise<T> {
  return retry(fn, {
    retries: Number.POSITIVE_INFINITY,
    baseMs: 250,
    capMs: 5_000,
    maxRetryTimeMs: GIVE_UP_AFTER_MS,
  });
}

export function getRun(api: UserApi, runId: string): Promise<Run> {
  return patiently(() =>
    must(api.client.GET("/api/v1/runs/{runId}", { params: { path: { runId } } })),
  );
}

/**
 * Writes a phase's log to `io.out` as it grows, until the coordinator says it is complete
 * (the phase ended and every byte was read). Returns the bytes written.
 */
export async function followLog(
  api: UserApi,
  runId: string,
  phase: "plan" | "apply",
  io: Io,
  options: { follow: boolean } = { follow: true },
): Promise<number> {
  let offset = 0;
  for (;;) {
    const res = await patiently(() =>
      api.raw("GET", `/api/v1/runs/${seg(runId)}/logs?phase=${phase}&offset=${offset}`),
    );
    const data = new Uint8Array(await res.arrayBuffer());
    const next = Number(res.headers.get(LOG_NEXT_OFFSET_HEADER));
    const isComplete = res.headers.get(LOG_COMPLETE_HEADER) === "true";
    if (data.byteLength > 0) {
      io.out.write(data);
    }
    offset = Number.isSafeInteger(next) && next >= offset ? next : offset + data.byteLength;
    if (isComplete || (!options.follow && data.byteLength === 0)) {
      return offset;
    }
    if (data.byteLength === 0) {
      await sleep(POLL_MS);
    }
  }
}

/**
 * Polls the run until `isDone(run)`, printing why it waits (on `io.err`) whenever the reason
 * changes, so a run stuck in the queue says so.
 */
export async function waitFor(
  api: UserApi,
  runId: string,
  isDone: (run: Run) => boolean,
  io: Io,
): Promise<Run> {
  let said: string | null = null;
  for (;;) {
    const run = await getRun(api, runId);
    if (isDone(run)) {
      return run;
    }
    if (run.waitingReason !== null && run.waitingReason !== said) {
      said = run.waitingReason;
      io.err.write(`Waiting: ${said}\n`);
    }
    await sleep(POLL_MS);
  }
}

/** The CLI exit code for a run that stopped moving. */
export function exitCodeFor(run: Run): CliExitCode {
  switch (run.status) {
    case "errored":
      return CLI_EXIT.runErrored;
    case "canceled":
    case "force_canceled":
    case "discarded":
      return CLI_EXIT.runCanceled;
    default:
      return CLI_EXIT.ok;
  }
}

/** One line saying how the run ended (or where it stopped), for stderr. */
export function describeEnd(run: Run): string {
  const reason = run.statusReason ? `: ${run.statusReason}` : "";
  switch (run.status) {
    case "applied":
      return `Run ${run.id} applied`;
    case "planned_and_finished":
      return `Run ${run.id} planned${run.isSpeculative ? " (speculative)" : " with no changes"}; nothing to apply`;
    case "planned":
      return `Run ${run.id} is planned and waits for confirmation: outpost confirm ${run.id}`;
    default:
      return `Run ${run.id} ${run.status.replace("_", "-")}${reason}`;
  }
}
