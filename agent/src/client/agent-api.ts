import {
  AGENT_ID_HEADER,
  AGENT_VERSION_HEADER,
  FeedbackClaimResponse,
  type FeedbackReport,
  FeedbackReportResponse,
  FinishRequest,
  FinishResponse,
  GoodbyeResponse,
  HeartbeatResponse,
  JobsNextReceived,
  RegisterRequest,
  RegisterResponse,
  type RunningJob,
  StartResponse,
} from "@outpost/protocol";
import type { HttpResponse } from "../net/fetch.ts";
import { type ContactMonitor, observed } from "./contact.ts";
import type { AgentCredentials } from "./credentials.ts";
import {
  CoordinatorError,
  type HttpTarget,
  type RequestInput,
  type RequestObserver,
  readJson,
  segment,
  send,
} from "./http.ts";
import { TokenRejected } from "./token-rejected.ts";

/** Extra time on top of the long-poll wait before a `jobs/next` request counts as lost. */
const POLL_MARGIN_MS = 20_000;

export { TokenRejected };

/** True when the coordinator does not know this agent id (any more): register again. */
export function isAgentUnknown(error: unknown): boolean {
  return error instanceof CoordinatorError && error.status === 404 && error.code === "NOT_FOUND";
}

/** True when a job-scoped call was refused because this agent no longer holds the lease. */
export function isLeaseGone(error: unknown): boolean {
  return error instanceof CoordinatorError && (error.status === 404 || error.status === 409);
}

export type AgentApiOptions = {
  address: string;
  /** The agent token, static or renewed through OIDC exchanges. */
  credentials: AgentCredentials;
  userAgent: string;
  /** Told of every answer and every transient failure, to log an outage once. */
  contact?: Pick<ContactMonitor, "failed" | "succeeded">;
  /** Told the coordinator's agent version whenever an answer carries it. */
  onAgentVersion?: (version: string) => void;
  /** Told of every request and its answer's status (metrics). */
  observe?: RequestObserver;
};

/**
 * The agent protocol (`/agent/v1/*`) with the agent token. Every body sent is built from and
 * every answer parsed with the shared schemas of `@outpost/protocol` (packages/protocol). Failures: TransientError
 * (network, timeout, 429, 5xx), {@link TokenRejected} (401), CoordinatorError (other 4xx),
 * ProtocolError (unreadable answer).
 */
export class AgentApi {
  private agentId: string | null = null;
  private readonly target: HttpTarget;
  private readonly o: AgentApiOptions;

  constructor(options: AgentApiOptions) {
    this.target = {
      address: options.address,
      userAgent: options.userAgent,
      ...(options.observe ? { observe: options.observe } : {}),
    };
    this.o = options;
  }

  /** The id from the last successful `register`, or null before it. */
  get id(): string | null {
    return this.agentId;
  }

  /** Registers this process with the token's pool; later calls use the id it returns. */
  async register(body: RegisterRequest): Promise<RegisterResponse> {
    const res = await this.call({
      method: "POST",
      path: "/agent/v1/register",
      ...json(RegisterRequest.parse(body)),
    });
    const answer = await readJson(res, RegisterResponse, "register");
    this.agentId = answer.agentId;
    return answer;
  }

  /** Long-polls for work; null when the wait ended without a job. */
  async next(waitSeconds: number, signal?: AbortSignal): Promise<JobsNextReceived | null> {
    const res = await this.call({
      method: "POST",
      path: `/agent/v1/jobs/next?wait=${waitSeconds}`,
      timeoutMs: waitSeconds * 1000 + POLL_MARGIN_MS,
      ...(signal ? { signal } : {}),
    });
    if (res.status === 204) {
      await res.body?.cancel();
      return null;
    }
    return readJson(res, JobsNextReceived, "jobs/next");
  }

  /** The two-phase acknowledge of a lease. */
  async start(jobId: string, leaseId: string): Promise<StartResponse> {
    const res = await this.call({
      method: "POST",
      path: `/agent/v1/jobs/${segment(jobId)}/leases/${segment(leaseId)}/start`,
    });
    return readJson(res, StartResponse, "start");
  }

  async heartbeat(running: RunningJob[]): Promise<HeartbeatResponse> {
    const res = await this.call({
      method: "POST",
      path: "/agent/v1/heartbeat",
      ...json({ running }),
    });
    return readJson(res, HeartbeatResponse, "heartbeat");
  }

  /** Reports how a job ended; repeating it for the same lease answers the same. */
  async finish(jobId: string, leaseId: string, body: FinishRequest): Promise<FinishResponse> {
    const res = await this.call({
      method: "POST",
      path: `/agent/v1/jobs/${segment(jobId)}/leases/${segment(leaseId)}/finish`,
      ...json(FinishRequest.parse(body)),
    });
    return readJson(res, FinishResponse, "finish");
  }

  /** Claims the pool's VCS feedback for `hosts` (the hosts this agent holds tokens for). */
  async claimFeedback(hosts: string[]): Promise<FeedbackClaimResponse> {
    const res = await this.call({
      method: "POST",
      path: "/agent/v1/feedback/claim",
      ...json({ hosts }),
    });
    return readJson(res, FeedbackClaimResponse, "feedback/claim");
  }

  /** Reports whether the VCS took a claimed feedback item. */
  async reportFeedback(itemId: string, report: FeedbackReport): Promise<FeedbackReportResponse> {
    const res = await this.call({
      method: "POST",
      path: `/agent/v1/feedback/${segment(itemId)}`,
      ...json(report),
    });
    return readJson(res, FeedbackReportResponse, "feedback report");
  }

  async goodbye(reason: string | null): Promise<GoodbyeResponse> {
    const res = await this.call({
      method: "POST",
      path: "/agent/v1/goodbye",
      timeoutMs: 10_000,
      ...json({ reason }),
    });
    return readJson(res, GoodbyeResponse, "goodbye");
  }

  /**
   * Sends with the current token. An expired one (401 TOKEN_EXPIRED, only OIDC-issued tokens
   * expire) is renewed and the request sent once more; any other 401 ends the agent.
   */
  private async call(input: Omit<RequestInput, "token">): Promise<HttpResponse> {
    const token = await this.o.credentials.current(input.signal);
    try {
      return await this.sendWith(input, token);
    } catch (error) {
      if (!(error instanceof CoordinatorError && error.code === "TOKEN_EXPIRED")) {
        throw error;
      }
      const fresh = await this.o.credentials.renewAfterExpiry(token, input.signal);
      return this.sendWith(input, fresh).catch((again: unknown) => {
        throw again instanceof CoordinatorError && again.code === "TOKEN_EXPIRED"
          ? new TokenRejected(`a freshly renewed agent token was already expired: ${again.message}`)
          : again;
      });
    }
  }

  private async sendWith(input: Omit<RequestInput, "token">, token: string): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...input.headers };
    if (this.agentId !== null) {
      headers[AGENT_ID_HEADER] = this.agentId;
    }
    try {
      const res = await observed(this.o.contact, () =>
        send(this.target, { ...input, headers, token }),
      );
      const version = res.headers.get(AGENT_VERSION_HEADER);
      if (version !== null) {
        this.o.onAgentVersion?.(version);
      }
      return res;
    } catch (error) {
      if (error instanceof CoordinatorError && error.code === "TOKEN_EXPIRED") {
        throw error;
      }
      if (error instanceof CoordinatorError && error.status === 401) {
        throw new TokenRejected(
          error.code === "TOKEN_REVOKED"
            ? "the agent token has been revoked; create a new one for this pool"
            : `the coordinator does not accept the agent token (${error.message})`,
        );
      }
      throw error;
    }
  }
}

function json(body: unknown): { headers: Record<string, string>; body: string } {
  return { headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}
