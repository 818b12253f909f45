/**
 * VCS feedback in agent mode (`feedback: "agent"` on a VCS hook): the coordinator says what to
 * post (commit statuses, the plan comment) and an agent that holds a token for the VCS host
 * posts it from inside the network, then reports whether the VCS took it. Tokens never cross
 * this wire: the agent names only the hosts it holds tokens for.
 */
import { z } from "zod";

/** A VCS API host as the agent names it: `host` or `host:port`, lowercase. */
export const VcsHost = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/, "must be a host or host:port");
export type VcsHost = z.infer<typeof VcsHost>;

/** The most VCS hosts one agent may name, and the most items one claim hands out. */
export const MAX_FEEDBACK_HOSTS = 32;
export const MAX_FEEDBACK_ITEMS = 10;

/** A feedback item's id (`fbk_…`), new whenever the coordinator replaces what to post. */
export const FeedbackItemId = z.string().regex(/^fbk_[a-z2-7]{26}$/, "must be a fbk_ id");

const Target = z.object({
  id: FeedbackItemId,
  runId: z.string(),
  provider: z.enum(["github", "gitlab"]),
  /** The VCS API base URL, e.g. `https://api.github.com`, `https://gitlab.example.com/api/v4`. */
  apiUrl: z.string(),
  /** The host of `apiUrl` (the agent posts only with the token it holds for this host). */
  host: VcsHost,
  /** `owner/name` (GitLab: the project's full path). */
  repository: z.string().min(1).max(500),
  sha: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/, "must be a commit id"),
});

/** A commit status to set: `context` is `outpost/<workspace name>`. */
export const StatusFeedback = Target.extend({
  kind: z.literal("status"),
  state: z.enum(["pending", "success", "failure", "error"]),
  /** GitLab's state for the same status: pending, running, success, failed, canceled. */
  gitlabState: z.enum(["pending", "running", "success", "failed", "canceled"]),
  description: z.string().max(1000),
  context: z.string().min(1).max(255),
  targetUrl: z.string(),
});
export type StatusFeedback = z.infer<typeof StatusFeedback>;

/** The pull/merge request's plan comment, edited in place when one carries `marker`. */
export const CommentFeedback = Target.extend({
  kind: z.literal("comment"),
  number: z.int().positive(),
  marker: z.string().min(1).max(200),
  body: z.string().max(1_000_000),
});
export type CommentFeedback = z.infer<typeof CommentFeedback>;

export const FeedbackItem = z.discriminatedUnion("kind", [StatusFeedback, CommentFeedback]);
export type FeedbackItem = z.infer<typeof FeedbackItem>;

/** `POST /agent/v1/feedback/claim`: the VCS hosts this agent holds tokens for (names only). */
export const FeedbackClaimRequest = z.strictObject({
  hosts: z.array(VcsHost).min(1).max(MAX_FEEDBACK_HOSTS),
});
export type FeedbackClaimRequest = z.infer<typeof FeedbackClaimRequest>;

export const FeedbackClaimResponse = z.object({
  /** Items now held by this agent for {@link FEEDBACK_CLAIM_SECONDS}, to post and report. */
  items: z.array(FeedbackItem),
  /** When to ask again. */
  pollIntervalSeconds: z.int().positive(),
});
export type FeedbackClaimResponse = z.infer<typeof FeedbackClaimResponse>;

/** How long a claimed item is the claiming agent's before another agent may take it. */
export const FEEDBACK_CLAIM_SECONDS = 300;

/** `POST /agent/v1/feedback/{itemId}`: how posting went. */
export const FeedbackReport = z.strictObject({
  posted: z.boolean(),
  /** Why not, as the VCS said it: "401 Bad credentials from github.example.com". */
  message: z.string().max(500).nullish(),
});
export type FeedbackReport = z.infer<typeof FeedbackReport>;

export const FeedbackReportResponse = z.object({
  /** False when the item had been replaced meanwhile: a newer one is posted instead. */
  recorded: z.boolean(),
});
export type FeedbackReportResponse = z.infer<typeof FeedbackReportResponse>;
