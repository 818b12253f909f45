/** What `/readyz` answers: whether the agent is ready, and a sentence saying why (or why not). */
export type Readiness = { isReady: boolean; reason: string };

/** The pool's registration, as the register answer gives it. */
export type Registration = { agentId: string; poolId: string; unknownAfterSeconds: number };

/**
 * The agent's standing with its coordinator, for `/readyz` and the metrics: whether it is
 * registered, when the coordinator last answered, and which long-polls it is holding. A held
 * poll is contact for the coordinator until its wait ends, so it is for readiness too; the
 * agent is ready while its last contact is within the pool's unknown threshold, which is the
 * coordinator's own rule for calling an agent `unknown`.
 */
export class AgentHealth {
  private readonly now: () => number;
  private registration: Registration | null = null;
  private lastContactAt: number | null = null;
  /** Each held long-poll: until when the coordinator holds it (it counts as contact till then). */
  private readonly heldPolls = new Set<{ heldUntil: number }>();
  private isStopping = false;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** A register answer: the agent is known to the pool (again). */
  registered(registration: Registration): void {
    this.registration = registration;
    this.lastContactAt = this.now();
  }

  /** The agent said goodbye: the pool lists it as exited. */
  left(): void {
    this.registration = null;
  }

  /** A signal arrived: the agent takes no more work and is leaving. */
  stopping(): void {
    this.isStopping = true;
  }

  /** The coordinator answered a request. */
  contacted(): void {
    this.lastContactAt = this.now();
  }

  /**
   * A long-poll asking to be held `waitMs` was sent; the function returned ends it. Unless it
   * never reached the coordinator (`held` false: refused, no such host), the coordinator held it
   * until it ended (even cut off), at most for its wait.
   */
  pollSent(waitMs: number): (held?: boolean) => void {
    const poll = { heldUntil: this.now() + waitMs };
    this.heldPolls.add(poll);
    return (held = true) => {
      this.heldPolls.delete(poll);
      if (!held) {
        return;
      }
      const heldTill = Math.min(this.now(), poll.heldUntil);
      this.lastContactAt = Math.max(this.lastContactAt ?? heldTill, heldTill);
    };
  }

  /** Milliseconds since the epoch of the last contact, a held poll counting up to now; null before any. */
  lastContact(): number | null {
    const now = this.now();
    let latest = this.lastContactAt;
    for (const poll of this.heldPolls) {
      latest = Math.max(latest ?? 0, Math.min(now, poll.heldUntil));
    }
    return latest;
  }

  /** Ready: registered, not stopping, and in contact within the pool's unknown threshold. */
  readiness(): Readiness {
    const registration = this.registration;
    if (this.isStopping) {
      return { isReady: false, reason: "shutting down" };
    }
    if (registration === null) {
      return { isReady: false, reason: "not registered with the coordinator" };
    }
    const last = this.lastContact() ?? 0;
    const silentMs = this.now() - last;
    const thresholdMs = registration.unknownAfterSeconds * 1000;
    const silent = `${Math.round(silentMs / 100) / 10} s`;
    if (silentMs > thresholdMs) {
      return {
        isReady: false,
        reason: `no contact with the coordinator for ${silent}; the pool calls an agent unknown after ${registration.unknownAfterSeconds} s`,
      };
    }
    return {
      isReady: true,
      reason: `registered as ${registration.agentId} in ${registration.poolId}; last contact ${silent} ago`,
    };
  }
}
