/**
 * Where the agent's token comes from. A static token never changes; with OIDC the agent reads its
 * JWT file, exchanges it (`POST /agent/v1/oidc/exchange`) for a short-lived agent token of its
 * pool, and exchanges again, re-reading the file, shortly before that token expires, or at once
 * when the coordinator answers 401 TOKEN_EXPIRED (after a suspend, say). Each renewal presents
 * the current token, so the coordinator keeps the agent's registration and its running jobs.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { TransientError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { retry } from "../retry.ts";
import { CoordinatorError, type HttpTarget, readJson, send } from "./http.ts";
import { TokenRejected } from "./token-rejected.ts";

/** The token the agent API sends, and what to do when the coordinator says it expired. */
export type AgentCredentials = {
  /** The token to send now; the first OIDC exchange happens on the first call. */
  current(signal?: AbortSignal): Promise<string>;
  /**
   * The coordinator answered 401 TOKEN_EXPIRED for `stale`: a fresh token, or rejects with
   * {@link TokenRejected} when none can be had (a static token, a revoked chain).
   */
  renewAfterExpiry(stale: string, signal?: AbortSignal): Promise<string>;
  /** Stops any scheduled renewal (the agent is leaving). */
  stop(): void;
};

/** A token from the environment or a token file: it never changes. */
export function staticCredentials(token: string): AgentCredentials {
  return {
    current: () => Promise.resolve(token),
    renewAfterExpiry: () =>
      Promise.reject(new TokenRejected("the agent token has expired; give the agent a new one")),
    stop: () => {},
  };
}

const ExchangeAnswer = z.object({
  token: z.string().regex(/^op_agent_/),
  expiresAt: z.iso.datetime(),
  tokenId: z.string(),
});

/** Renew when this much of the token's life is left: a fifth of it, at most five minutes. */
export function renewalDelayMs(issuedAtMs: number, expiresAtMs: number): number {
  const lifetime = Math.max(0, expiresAtMs - issuedAtMs);
  return Math.max(0, lifetime - Math.min(300_000, lifetime / 5));
}

/** Exchanges refused by the issuer's verdict are tried again this often (the file may lag). */
const REFUSED_RETRIES = 4;

export type OidcOptions = {
  target: HttpTarget;
  tokenFile: string;
  poolId: string;
  tokenExpirationSeconds: number;
  logger: Logger;
};

/**
 * OIDC credentials. Concurrent callers share one exchange. An exchange that fails for a passing
 * reason (network, 5xx, an unreadable or refused token file, which a kubelet or CI runner may be
 * rewriting) is retried with backoff; a refusal that persists or a revoked chain ends the agent
 * with {@link TokenRejected}.
 */
export function oidcCredentials(o: OidcOptions): AgentCredentials {
  let token: { value: string; expiresAt: number } | null = null;
  let exchanging: Promise<string> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const exchangeOnce = async (signal?: AbortSignal): Promise<string> => {
    let jwt: string;
    try {
      jwt = (await readFile(o.tokenFile, "utf8")).trim();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
      throw new RefusedExchange(`cannot read the OIDC token file ${o.tokenFile} (${code})`);
    }
    const issuedAt = Date.now();
    let res: Awaited<ReturnType<typeof send>>;
    try {
      res = await send(o.target, {
        method: "POST",
        path: "/agent/v1/oidc/exchange",
        ...(token === null ? {} : { token: token.value }),
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          poolId: o.poolId,
          oidcToken: jwt,
          tokenExpirationSeconds: o.tokenExpirationSeconds,
        }),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (error instanceof CoordinatorError && error.code === "TOKEN_REVOKED") {
        throw new TokenRejected("the agent token has been revoked; this agent cannot log in again");
      }
      if (error instanceof CoordinatorError && error.status === 401) {
        throw new RefusedExchange(error.message);
      }
      throw error;
    }
    const answer = await readJson(res, ExchangeAnswer, "oidc/exchange");
    token = { value: answer.token, expiresAt: Date.parse(answer.expiresAt) };
    o.logger.info(
      { tokenId: answer.tokenId, poolId: o.poolId, expiresAt: answer.expiresAt },
      "logged in with the OIDC token",
    );
    schedule(issuedAt, token.expiresAt);
    return answer.token;
  };

  const exchange = (signal?: AbortSignal): Promise<string> => {
    let refusals = 0;
    exchanging ??= retry(() => exchangeOnce(signal), {
      retries: Number.POSITIVE_INFINITY,
      ...(signal ? { signal } : {}),
      isRetryable: (error) =>
        error instanceof TransientError ||
        (error instanceof RefusedExchange && refusals++ < REFUSED_RETRIES),
      onRetry: ({ error, waitMs }) =>
        o.logger.warn(
          { err: error instanceof Error ? error.message : String(error), retryInMs: waitMs },
          "OIDC exchange failed; retrying",
        ),
    })
      .catch((error: unknown) => {
        throw error instanceof RefusedExchange
          ? new TokenRejected(`the coordinator refused the OIDC token: ${error.message}`)
          : error;
      })
      .finally(() => {
        exchanging = null;
      });
    return exchanging;
  };

  const schedule = (issuedAt: number, expiresAt: number) => {
    if (timer !== null) {
      clearTimeout(timer);
    }
    if (stopped) {
      return;
    }
    timer = setTimeout(
      () => {
        timer = null;
        exchange().catch((error: unknown) => {
          // The next request meets TOKEN_EXPIRED and renews (or ends the agent) then.
          o.logger.error(
            { err: error instanceof Error ? error.message : String(error) },
            "renewing the agent token failed",
          );
        });
      },
      renewalDelayMs(issuedAt, expiresAt),
    );
    timer.unref();
  };

  return {
    current: (signal) => (token === null ? exchange(signal) : Promise.resolve(token.value)),
    renewAfterExpiry: (stale, signal) =>
      token !== null && token.value !== stale ? Promise.resolve(token.value) : exchange(signal),
    stop: () => {
      stopped = true;
      if (timer !== null) {
        clearTimeout(timer);
      }
    },
  };
}

/** The coordinator refused the OIDC token (or the file could not be read): maybe passing. */
class RefusedExchange extends Error {
  override name = "RefusedExchange";
}
