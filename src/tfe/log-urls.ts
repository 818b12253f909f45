/**
 * The `log-read-url` of a plan or an apply, as Terraform Cloud's archivist hands them out: a
 * capability URL that go-tfe's `LogReader` reads with `offset` and `limit` (`logreader.go`),
 * without asking the API again. The token is the run id, the phase and an expiry sealed under
 * `ENCRYPTION_KEY` (AES-GCM, bound to this purpose): it cannot be forged or pointed at another
 * run, survives key rotation while its key stays in the ring, and is issued only to callers who
 * may read the run. The stream is framed as the reader expects: STX, the log as stored (masked
 * by the agent), then ETX once the phase can write no more.
 */
import { ok } from "@outpost/common";
import { loadKeyring, open, seal } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { phaseTimeoutMs } from "../runs/model.ts";

const PURPOSE = "tfe-log-read-url";
const STX = 0x02;
const ETX = 0x03;

/** How long a log URL reads: the phase's timeout and an hour (the CLI reads it once per phase). */
function ttlMs(
  env: { PLAN_TIMEOUT_MS?: string; APPLY_TIMEOUT_MS?: string },
  phase: "plan" | "apply",
) {
  return phaseTimeoutMs(env, phase) + 3_600_000;
}

function toBase64Url(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

function fromBase64Url(text: string): string | null {
  try {
    return atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return null;
  }
}

/** A fresh log-read token for the run's phase, valid from `now`. */
export async function logReadToken(
  env: { ENCRYPTION_KEY?: string; PLAN_TIMEOUT_MS?: string; APPLY_TIMEOUT_MS?: string },
  target: { runId: string; phase: "plan" | "apply" },
  now: number,
): Promise<string> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    throw new Error(`log-read URLs need ENCRYPTION_KEY (${keyring.reason})`);
  }
  const claims = { ...target, expiresAt: now + ttlMs(env, target.phase) };
  const { sealed } = await seal(keyring.value, JSON.stringify(claims), PURPOSE);
  return toBase64Url(sealed);
}

/** The run and phase a token opens, or `not_found` for a forged, altered or expired one. */
export async function openLogReadToken(
  env: { ENCRYPTION_KEY?: string },
  token: string,
  now: number,
): Promise<Outcome<{ runId: string; phase: "plan" | "apply" }, "not_found">> {
  const unknown = refuse("not_found", "log not found: the log-read URL is unknown or has expired");
  const sealed = fromBase64Url(token);
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (sealed === null || !keyring.ok) {
    return unknown;
  }
  const opened = await open(keyring.value, sealed, PURPOSE);
  if (!opened.ok) {
    return unknown;
  }
  const claims = JSON.parse(opened.value) as {
    runId: string;
    phase: "plan" | "apply";
    expiresAt: number;
  };
  return now > claims.expiresAt ? unknown : ok({ runId: claims.runId, phase: claims.phase });
}

/** What a log read needs: the stored bytes from an offset, and whether the phase is over. */
export type LogSource = {
  /** Bytes from `offset`; `nextOffset` is where they end (less than `offset` past the end). */
  read(
    offset: number,
    limit: number,
  ): Promise<{ data: Uint8Array; nextOffset: number; isComplete: boolean }>;
};

/**
 * The framed stream's bytes from `offset` (at most `limit`): position 0 is STX, position k+1 is
 * the log's byte k, and ETX follows the last byte once the log is complete.
 */
export async function readFramed(source: LogSource, offset: number, limit: number) {
  const head = offset === 0 ? [STX] : [];
  const logOffset = Math.max(0, offset - 1);
  const room = limit - head.length;
  if (room <= 0) {
    return new Uint8Array(head);
  }
  const read = await source.read(logOffset, room);
  if (read.nextOffset - read.data.byteLength !== logOffset) {
    // Past the ETX: nothing is there.
    return new Uint8Array();
  }
  const ended = read.isComplete && read.data.byteLength < room;
  const out = new Uint8Array(head.length + read.data.byteLength + (ended ? 1 : 0));
  out.set(head, 0);
  out.set(read.data, head.length);
  if (ended) {
    out[out.length - 1] = ETX;
  }
  return out;
}
