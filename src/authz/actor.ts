/**
 * Who did something, as records keep it: runs (`createdBy`, `confirmedBy`, `discardedBy`,
 * `canceledBy`), state versions (`createdBy`) and audit events name an actor, never a bare token
 * id. The name is recorded with the act, so a record reads the same after the token is revoked
 * or the person renamed. A new kind of actor (a run trigger, say) is one more entry in
 * {@link ACTOR_TYPES}.
 */
import { z } from "@hono/zod-openapi";

/**
 * `user`: a person; `team`: a team token; `org-token`: an organization token; `vcs`: a webhook
 * delivery; `schedule`: a schedule's tick; `run-trigger`: a run trigger; `run`: a run's own job (state it wrote); `agent`: an
 * agent or its token; `system`: the coordinator itself (a released lock, a reconciled run).
 */
export const ACTOR_TYPES = [
  "user",
  "team",
  "org-token",
  "vcs",
  "schedule",
  "run-trigger",
  "run",
  "agent",
  "system",
] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** An actor: its kind, its id (`usr_…`, `team_…`, `tok_…`, `hook_…`, …) and a readable name. */
export type Actor = { type: ActorType; id: string; name: string };

/**
 * How a person or token reached the coordinator, kept on audit events: `sso` (a session from the
 * OpenID provider), `access` (a Cloudflare Access assertion), `user-token` (a personal token),
 * `team-token`, `org-token` (bearer), `token-session` (the dashboard's break-glass token sign-in).
 */
export const SIGN_IN_METHODS = [
  "sso",
  "access",
  "user-token",
  "team-token",
  "org-token",
  "token-session",
] as const;
export type SignInMethod = (typeof SIGN_IN_METHODS)[number];

/** An actor as an audit event records it: with how it signed in, when a person or token acted. */
export type AuditActor = Actor & { via?: SignInMethod };

export const ActorSchema = z
  .object({
    type: z.enum(ACTOR_TYPES),
    id: z.string(),
    name: z.string().openapi({ description: "A person's name or email, a token's description" }),
  })
  .openapi("Actor");

/** The coordinator itself. */
export const SYSTEM_ACTOR: Actor = { type: "system", id: "system", name: "Outpost" };

/** A run acting through its job's token (a state write, a lock). */
export function runActor(runId: string): Actor {
  return { type: "run", id: runId, name: `run ${runId}` };
}

/** An agent, or an agent token (`atok_…`). */
export function agentActor(id: string, name?: string | null): Actor {
  return { type: "agent", id, name: name || id };
}

/** A webhook delivery through a VCS hook. */
export function vcsActor(hookId: string, name: string): Actor {
  return { type: "vcs", id: hookId, name };
}

/** Drops what only an audit event keeps (how the actor signed in). */
export function plainActor(actor: AuditActor): Actor {
  return { type: actor.type, id: actor.id, name: actor.name };
}
