/**
 * Who is calling, resolved once per request by the auth middleware. People and the tokens that
 * act for them (org, team, user) are decided by `may` (`service.ts`); agent and run tokens keep
 * their own narrow rules (their routes and `state/access.ts`).
 */
import type { Role } from "../tokens/model.ts";
import type { AuditActor, SignInMethod } from "./actor.ts";

/** An organization token, by bearer or through the dashboard's token sign-in. */
export type OrgPrincipal = {
  kind: "org";
  orgId: string;
  tokenId: string;
  role: Role;
  /** The token's description. */
  name: string;
  via: Extract<SignInMethod, "org-token" | "token-session">;
};

/**
 * A person: through a session (SSO or Access sign-in), a personal token or a Cloudflare Access
 * assertion. `role` is the highest organization role of the user's teams (null: none); the teams
 * themselves are looked up by the queries that need them (`queries.ts`), so a membership change
 * counts from the next request.
 */
export type UserPrincipal = {
  kind: "user";
  orgId: string;
  userId: string;
  email: string;
  name: string;
  role: Role | null;
  via: Extract<SignInMethod, "sso" | "access" | "user-token">;
};

/** A team token: the team's organization role and its workspace access. */
export type TeamPrincipal = {
  kind: "team";
  orgId: string;
  teamId: string;
  tokenId: string;
  /** The team's name. */
  name: string;
  role: Role | null;
};

export type AgentPrincipal = {
  kind: "agent";
  orgId: string;
  tokenId: string;
  poolId: string;
  /**
   * What the pool binds the agent's registration to: the token's own id, or for a token issued
   * by OIDC exchange the first token of its chain of renewals.
   */
  chainId: string;
};

export type RunPrincipal = {
  kind: "run";
  orgId: string;
  tokenId: string;
  runId: string;
  workspaceId: string;
  jobId: string;
};

export type Principal =
  | OrgPrincipal
  | UserPrincipal
  | TeamPrincipal
  | AgentPrincipal
  | RunPrincipal;

/** The principals `may` decides for: people and the tokens acting for them. */
export type PersonPrincipal = OrgPrincipal | UserPrincipal | TeamPrincipal;

export const PERSON_KINDS = ["org", "user", "team"] as const;

export function isPerson(principal: Principal): principal is PersonPrincipal {
  return principal.kind === "org" || principal.kind === "user" || principal.kind === "team";
}

/**
 * The id a principal holds locks and records under: the user for a person (whichever way they
 * signed in, so a lock taken in the dashboard is theirs in the CLI too), else the token's id.
 */
export function principalId(principal: Principal): string {
  switch (principal.kind) {
    case "user":
      return principal.userId;
    case "team":
      return principal.teamId;
    case "run":
      return principal.runId;
    default:
      return principal.tokenId;
  }
}

/** The actor a principal's acts are recorded under, with how it signed in. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case "org":
      return { type: "org-token", id: principal.tokenId, name: principal.name, via: principal.via };
    case "user":
      return {
        type: "user",
        id: principal.userId,
        name: principal.name || principal.email,
        via: principal.via,
      };
    case "team":
      return { type: "team", id: principal.teamId, name: principal.name, via: "team-token" };
    case "agent":
      return { type: "agent", id: principal.tokenId, name: principal.tokenId };
    case "run":
      return { type: "run", id: principal.runId, name: `run ${principal.runId}` };
  }
}
