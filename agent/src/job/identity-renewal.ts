/**
 * Keeps a running job's workload identity token file fresh. Tokens are short-lived (the
 * workspace's `workloadIdentityTokenLifetimeSeconds`, 15 minutes by default), so a copy taken by
 * workspace code is worthless soon after the job; cloud SDKs re-read the file, so rewriting it
 * keeps a long job working. The renewal point comes from the token's own `iat`/`exp` (two thirds
 * of its lifetime after it was received), never from a setting the agent would have to know.
 */
import { randomBytes } from "node:crypto";
import { rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { retry } from "../retry.ts";
import { sleep } from "../sleep.ts";

/** Never renew sooner than this after the last token, whatever its claims say. */
const MIN_DELAY_MS = 1000;

/**
 * Milliseconds after receiving `token` at which to fetch the next one: two thirds of its
 * lifetime (`exp - iat`), so a third is left for retries. Measured on the agent's own clock from
 * when the token arrived, so a skew between agent and coordinator does not matter.
 */
export function renewalDelayMs(token: string): number {
  const { iat, exp } = claimsOf(token);
  if (typeof iat !== "number" || typeof exp !== "number" || exp <= iat) {
    return MIN_DELAY_MS;
  }
  return Math.max(MIN_DELAY_MS, Math.floor(((exp - iat) * 1000 * 2) / 3));
}

/** The JWT's payload, unverified (the coordinator signed it for clouds, not for the agent). */
function claimsOf(token: string): { iat?: unknown; exp?: unknown } {
  try {
    const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());
    return typeof payload === "object" && payload !== null ? payload : {};
  } catch {
    return {};
  }
}

/**
 * Replaces `file` with `contents` (mode 0600) through a temporary file in the same directory and
 * a rename, so a reader sees the old token or the new one, never a partial file.
 */
export async function writeFileAtomically(file: string, contents: string): Promise<void> {
  const temp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`,
  );
  try {
    await writeFile(temp, contents, { mode: 0o600, flag: "wx" });
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** A renewal loop; `stop` ends it and resolves once no write can happen any more. */
export type IdentityRenewal = { stop(): Promise<void> };

/**
 * Starts renewing `file`, which holds `token`: at each renewal point `renew` is asked for a fresh
 * token (transient failures are retried with backoff until the current token expires) and the
 * file is rewritten atomically. A failure that is not transient (the job ended: its run token is
 * refused) or an expired token ends the loop, told through `onStopped`; so does `stop()`.
 */
export function startIdentityRenewal(input: {
  file: string;
  token: string;
  renew: () => Promise<{ token: string }>;
  /** Each new token, so the job's log masks it too. */
  onRenewed?: (token: string) => void;
  /** Why renewing ended on its own (not told when `stop()` ended it). */
  onStopped?: (why: string) => void;
}): IdentityRenewal {
  const stopping = new AbortController();
  const { signal } = stopping;
  const loop = async () => {
    let token = input.token;
    for (;;) {
      const delay = renewalDelayMs(token);
      await sleep(delay, signal);
      if (signal.aborted) {
        return;
      }
      // What is left of the current token's life: retrying past it is pointless.
      const leftMs = Math.max(MIN_DELAY_MS, delay / 2);
      const fresh = await retry(() => input.renew(), {
        retries: Number.POSITIVE_INFINITY,
        maxRetryTimeMs: leftMs,
        signal,
      });
      if (signal.aborted) {
        return;
      }
      await writeFileAtomically(input.file, fresh.token);
      token = fresh.token;
      input.onRenewed?.(token);
    }
  };
  const done = loop().catch((error: unknown) => {
    if (!signal.aborted) {
      input.onStopped?.(error instanceof Error ? error.message : String(error));
    }
  });
  return {
    async stop() {
      stopping.abort(new Error("the job ended"));
      await done;
    },
  };
}
