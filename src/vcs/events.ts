/**
 * GitHub and GitLab webhook payloads → {@link ParsedDelivery}. Only the fields the triggers use
 * are validated (objects stay loose, since providers add fields all the time); a payload missing
 * one of them is malformed (400), an event or action that changes no code is ignored (202).
 * Field names follow the providers' documented payloads (summarized in docs/vcs.md).
 */
import { z } from "@hono/zod-openapi";
import { type ParsedDelivery, ZERO_SHA } from "./model.ts";

const Sha = z.string().regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/, "must be a full commit id");
const Paths = z.array(z.string()).optional().default([]);
const Commit = z.looseObject({ added: Paths, removed: Paths, modified: Paths });

const GitHubRepository = z.looseObject({
  clone_url: z.string(),
  ssh_url: z.string().nullish(),
  html_url: z.string().nullish(),
  default_branch: z.string().nullish(),
});

const GitHubPush = z.looseObject({
  ref: z.string(),
  after: Sha,
  deleted: z.boolean().optional().default(false),
  commits: z.array(Commit).optional().default([]),
  head_commit: z
    .looseObject({
      message: z.string().nullish(),
      author: z.looseObject({ name: z.string().nullish(), username: z.string().nullish() }),
    })
    .nullish(),
  pusher: z.looseObject({ name: z.string().nullish() }).nullish(),
  repository: GitHubRepository,
});

const GitHubPullRequest = z.looseObject({
  action: z.string(),
  number: z.number().int().positive(),
  pull_request: z.looseObject({
    title: z.string().nullish(),
    user: z.looseObject({ login: z.string() }).nullish(),
    head: z.looseObject({
      ref: z.string(),
      sha: Sha,
      repo: z.looseObject({ id: z.number() }).nullish(),
    }),
    base: z.looseObject({ ref: z.string(), repo: z.looseObject({ id: z.number() }) }),
  }),
  repository: GitHubRepository,
});

// GitHub's webhook docs cap `commits` at 2048, but payloads built from the events API list 20.
// A list that long may be incomplete: treat it as unknown and run rather than miss a change.
const GITHUB_COMMIT_PAGE = 20;

export type ParseResult = { ok: true; value: ParsedDelivery } | { ok: false; message: string };

function malformed(error: z.ZodError): ParseResult {
  const first = error.issues[0];
  const where = first ? first.path.join(".") || "payload" : "payload";
  return { ok: false, message: `malformed payload: ${where}: ${first?.message ?? "invalid"}` };
}

const ignored = (reason: string): ParseResult => ({ ok: true, value: { kind: "ignored", reason } });

function changedPaths(commits: z.infer<typeof Commit>[]): string[] {
  const files = new Set<string>();
  for (const c of commits) {
    for (const f of [...c.added, ...c.removed, ...c.modified]) {
      files.add(f);
    }
  }
  return [...files];
}

function branchOf(ref: string): string | null {
  return ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : null;
}

const urls = (...candidates: (string | null | undefined)[]) =>
  candidates.filter((u): u is string => typeof u === "string" && u !== "");

/** Parses a GitHub delivery by its `X-GitHub-Event` name. */
export function parseGitHub(event: string, payload: unknown): ParseResult {
  if (event === "ping") {
    return { ok: true, value: { kind: "ping" } };
  }
  if (event === "push") {
    const parsed = GitHubPush.safeParse(payload);
    if (!parsed.success) {
      return malformed(parsed.error);
    }
    const p = parsed.data;
    const branch = branchOf(p.ref);
    if (branch === null) {
      return ignored(`push to ${p.ref} is not a branch push`);
    }
    const author = p.head_commit?.author.username ?? p.head_commit?.author.name ?? p.pusher?.name;
    return {
      ok: true,
      value: {
        kind: "event",
        event: {
          kind: "push",
          repoUrls: urls(p.repository.clone_url, p.repository.ssh_url, p.repository.html_url),
          defaultBranch: p.repository.default_branch ?? null,
          branch,
          commitSha: p.after,
          isDeletion: p.deleted || ZERO_SHA.test(p.after),
          changedFiles: p.commits.length >= GITHUB_COMMIT_PAGE ? null : changedPaths(p.commits),
          author: author ?? null,
          commitMessage: p.head_commit?.message ?? null,
        },
      },
    };
  }
  if (event === "pull_request") {
    const parsed = GitHubPullRequest.safeParse(payload);
    if (!parsed.success) {
      return malformed(parsed.error);
    }
    const p = parsed.data;
    const action = ["opened", "synchronize", "reopened"].includes(p.action)
      ? "plan"
      : p.action === "closed"
        ? "close"
        : null;
    if (action === null) {
      return ignored(`pull_request action "${p.action}" changes no code`);
    }
    const pr = p.pull_request;
    return {
      ok: true,
      value: {
        kind: "event",
        event: {
          kind: "pull_request",
          action,
          repoUrls: urls(p.repository.clone_url, p.repository.ssh_url, p.repository.html_url),
          defaultBranch: p.repository.default_branch ?? null,
          baseBranch: pr.base.ref,
          headBranch: pr.head.ref,
          commitSha: pr.head.sha,
          number: p.number,
          // A deleted head repository (null) can only have been a fork.
          isFork: !pr.head.repo || pr.head.repo.id !== pr.base.repo.id,
          author: pr.user?.login ?? null,
          title: pr.title ?? null,
        },
      },
    };
  }
  return ignored(`event "${event}" does not trigger runs`);
}

const GitLabProject = z.looseObject({
  git_http_url: z.string(),
  git_ssh_url: z.string().nullish(),
  web_url: z.string().nullish(),
  default_branch: z.string().nullish(),
});

const GitLabPush = z.looseObject({
  object_kind: z.literal("push"),
  ref: z.string(),
  after: Sha,
  user_username: z.string().nullish(),
  user_name: z.string().nullish(),
  commits: z
    .array(Commit.extend({ id: z.string(), message: z.string().nullish() }))
    .optional()
    .default([]),
  total_commits_count: z.number().int().nonnegative().optional(),
  project: GitLabProject,
});

const GitLabMergeRequest = z.looseObject({
  object_kind: z.literal("merge_request"),
  user: z.looseObject({ username: z.string().nullish(), name: z.string().nullish() }).nullish(),
  project: GitLabProject,
  object_attributes: z.looseObject({
    iid: z.number().int().positive(),
    action: z.string().nullish(),
    title: z.string().nullish(),
    source_branch: z.string(),
    target_branch: z.string(),
    source_project_id: z.number(),
    target_project_id: z.number(),
    oldrev: z.string().nullish(),
    last_commit: z.looseObject({ id: Sha }),
  }),
});

/** Parses a GitLab delivery by its `X-Gitlab-Event` name. */
export function parseGitLab(event: string, payload: unknown): ParseResult {
  if (event === "Push Hook") {
    const parsed = GitLabPush.safeParse(payload);
    if (!parsed.success) {
      return malformed(parsed.error);
    }
    const p = parsed.data;
    const branch = branchOf(p.ref);
    if (branch === null) {
      return ignored(`push to ${p.ref} is not a branch push`);
    }
    const head = p.commits.find((c) => c.id === p.after) ?? p.commits.at(-1);
    const isComplete = (p.total_commits_count ?? p.commits.length) <= p.commits.length;
    return {
      ok: true,
      value: {
        kind: "event",
        event: {
          kind: "push",
          repoUrls: urls(p.project.git_http_url, p.project.git_ssh_url, p.project.web_url),
          defaultBranch: p.project.default_branch ?? null,
          branch,
          commitSha: p.after,
          isDeletion: ZERO_SHA.test(p.after),
          changedFiles: isComplete ? changedPaths(p.commits) : null,
          author: p.user_username ?? p.user_name ?? null,
          commitMessage: head?.message ?? null,
        },
      },
    };
  }
  if (event === "Merge Request Hook") {
    const parsed = GitLabMergeRequest.safeParse(payload);
    if (!parsed.success) {
      return malformed(parsed.error);
    }
    const p = parsed.data;
    const mr = p.object_attributes;
    const verb = mr.action ?? "";
    // "update" without oldrev is a title, label or description edit: no new code to plan.
    const action =
      verb === "open" || verb === "reopen" || (verb === "update" && mr.oldrev)
        ? "plan"
        : verb === "close" || verb === "merge"
          ? "close"
          : null;
    if (action === null) {
      return ignored(`merge request action "${verb || "none"}" changes no code`);
    }
    return {
      ok: true,
      value: {
        kind: "event",
        event: {
          kind: "pull_request",
          action,
          repoUrls: urls(p.project.git_http_url, p.project.git_ssh_url, p.project.web_url),
          defaultBranch: p.project.default_branch ?? null,
          baseBranch: mr.target_branch,
          headBranch: mr.source_branch,
          commitSha: mr.last_commit.id,
          number: mr.iid,
          isFork: mr.source_project_id !== mr.target_project_id,
          author: p.user?.username ?? p.user?.name ?? null,
          title: mr.title ?? null,
        },
      },
    };
  }
  if (event === "Tag Push Hook") {
    return ignored("tag pushes do not trigger runs");
  }
  return ignored(`event "${event}" does not trigger runs`);
}
