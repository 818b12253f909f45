import { done, must } from "../api.ts";
import { command, countFlag, group, secondsFlag } from "../args.ts";
import { CLI_EXIT } from "../errors.ts";
import { cell, json, table } from "../output.ts";

const liveness = {
  "unknown-after": { type: "string", description: "seconds without contact before unknown" },
  "errored-after": { type: "string", description: "seconds unknown before errored" },
  retention: { type: "string", description: "seconds an offline agent stays listed" },
  "max-token-expiration": {
    type: "string",
    description: "longest lifetime in seconds of an agent token from an OIDC exchange",
  },
} as const;

const autoscaling = {
  "min-agents": { type: "string", description: "autoscaling: the fewest agents to ask for" },
  "max-agents": { type: "string", description: "autoscaling: the most agents to ask for" },
  "jobs-per-agent": {
    type: "string",
    description: "autoscaling: jobs one agent runs at once (its --concurrency)",
  },
} as const;

function autoscalingBody(values: {
  "min-agents"?: string;
  "max-agents"?: string;
  "jobs-per-agent"?: string;
}) {
  const body: { minAgents?: number; maxAgents?: number; jobsPerAgent?: number } = {};
  const min = countFlag(values["min-agents"], "--min-agents");
  const max = countFlag(values["max-agents"], "--max-agents");
  const perAgent = countFlag(values["jobs-per-agent"], "--jobs-per-agent");
  if (min !== undefined) {
    body.minAgents = min;
  }
  if (max !== undefined) {
    body.maxAgents = max;
  }
  if (perAgent !== undefined) {
    body.jobsPerAgent = perAgent;
  }
  return body;
}

function livenessBody(values: {
  "unknown-after"?: string;
  "errored-after"?: string;
  retention?: string;
  "max-token-expiration"?: string;
}) {
  const body: {
    unknownAfterSeconds?: number;
    erroredAfterSeconds?: number;
    retentionSeconds?: number;
    maxTokenExpirationSeconds?: number;
  } = {};
  const unknown = secondsFlag(values["unknown-after"], "--unknown-after");
  const errored = secondsFlag(values["errored-after"], "--errored-after");
  const retention = secondsFlag(values.retention, "--retention");
  if (unknown !== undefined) {
    body.unknownAfterSeconds = unknown;
  }
  if (errored !== undefined) {
    body.erroredAfterSeconds = errored;
  }
  if (retention !== undefined) {
    body.retentionSeconds = retention;
  }
  const maxExpiration = secondsFlag(values["max-token-expiration"], "--max-token-expiration");
  if (maxExpiration !== undefined) {
    body.maxTokenExpirationSeconds = maxExpiration;
  }
  return body;
}

/** Which workspaces may run on the pool, as a line. */
function scopeText(pool: {
  organizationScoped: boolean;
  allowedWorkspaceIds: string[];
  allowedProjectIds: string[];
}): string {
  if (pool.organizationScoped) {
    return "every workspace of the organization";
  }
  const named = [
    ...pool.allowedProjectIds.map((id) => `project ${id}`),
    ...pool.allowedWorkspaceIds.map((id) => `workspace ${id}`),
  ];
  return `only ${named.join(", ") || "(none)"}`;
}

const list = command(
  { summary: "list agent pools", options: {}, positionals: [], required: 0 },
  async (ctx, { values }) => {
    const { pools } = await must((await ctx.api()).client.GET("/api/v1/pools"));
    ctx.out.write(
      values.json
        ? json(pools)
        : table([
            ["ID", "NAME", "DESCRIPTION"],
            ...pools.map((p) => [p.id, p.name, cell(p.description)]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const create = command(
  {
    summary: "create an agent pool",
    options: {
      description: { type: "string", description: "what the pool is for" },
      ...liveness,
      ...autoscaling,
    },
    positionals: ["NAME"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const pool = await must(
      (await ctx.api()).client.POST("/api/v1/pools", {
        body: {
          name: positionals[0] ?? "",
          ...(values.description === undefined ? {} : { description: values.description }),
          ...livenessBody(values),
          ...autoscalingBody(values),
        },
      }),
    );
    ctx.out.write(values.json ? json(pool) : `${pool.id}\n`);
    ctx.err.write(`Created pool ${pool.name}\n`);
    return CLI_EXIT.ok;
  },
);

const update = command(
  {
    summary: "change a pool's name, description, liveness or autoscaling settings",
    options: {
      name: { type: "string", description: "new name" },
      description: { type: "string", description: "new description" },
      ...liveness,
      ...autoscaling,
    },
    positionals: ["POOL_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const pool = await must(
      (await ctx.api()).client.PATCH("/api/v1/pools/{poolId}", {
        params: { path: { poolId: positionals[0] ?? "" } },
        body: {
          ...(values.name === undefined ? {} : { name: values.name }),
          ...(values.description === undefined ? {} : { description: values.description }),
          ...livenessBody(values),
          ...autoscalingBody(values),
        },
      }),
    );
    ctx.out.write(values.json ? json(pool) : `${pool.id}\n`);
    return CLI_EXIT.ok;
  },
);

const show = command(
  { summary: "show a pool with its agents", options: {}, positionals: ["POOL_ID"], required: 1 },
  async (ctx, { values, positionals }) => {
    const pool = await must(
      (await ctx.api()).client.GET("/api/v1/pools/{poolId}", {
        params: { path: { poolId: positionals[0] ?? "" } },
      }),
    );
    if (values.json) {
      ctx.out.write(json(pool));
      return CLI_EXIT.ok;
    }
    ctx.out.write(
      `${pool.name} (${pool.id})\n` +
        `liveness: unknown after ${pool.unknownAfterSeconds}s, errored after ${pool.erroredAfterSeconds}s, listed ${pool.retentionSeconds}s after going offline\n` +
        `OIDC-issued agent tokens live at most ${pool.maxTokenExpirationSeconds}s\n` +
        `autoscaling: ${pool.minAgents} to ${pool.maxAgents} agents, ${pool.jobsPerAgent} ${pool.jobsPerAgent === 1 ? "job" : "jobs"} per agent\n` +
        `scope: ${scopeText(pool)}\n` +
        `workspaces: ${pool.workspaces.map((w) => (w.allowed ? w.name : `${w.name} (not allowed)`)).join(", ") || "-"}\n\n`,
    );
    ctx.out.write(
      table([
        ["AGENT", "NAME", "STATUS", "VERSION", "JOBS", "LAST CONTACT"],
        ...pool.agents.map((a) => [
          a.id,
          cell(a.name),
          a.status,
          a.version,
          `${a.runningJobs.length}/${a.capacity}`,
          a.lastContactAt,
        ]),
      ]),
    );
    return CLI_EXIT.ok;
  },
);

const remove = command(
  { summary: "delete an unused pool", options: {}, positionals: ["POOL_ID"], required: 1 },
  async (ctx, { positionals }) => {
    const poolId = positionals[0] ?? "";
    await done(
      (await ctx.api()).client.DELETE("/api/v1/pools/{poolId}", { params: { path: { poolId } } }),
    );
    ctx.err.write(`Deleted pool ${poolId}\n`);
    return CLI_EXIT.ok;
  },
);

const autoscalingSignal = command(
  {
    summary: "how many agents the pool should have now, and why (what KEDA reads)",
    options: {},
    positionals: ["POOL_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const signal = await must(
      (await ctx.api()).client.GET("/api/v1/pools/{poolId}/autoscaling", {
        params: { path: { poolId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(signal)
        : `desired agents: ${signal.desiredAgents} (between ${signal.minAgents} and ${signal.maxAgents})\n` +
            `jobs: ${signal.queuedJobs} queued, ${signal.runningJobs} running\n` +
            `agents: ${signal.idleAgents} idle, ${signal.busyAgents} busy\n`,
    );
    return CLI_EXIT.ok;
  },
);

export const pools = group("agent pools", {
  list,
  create,
  show,
  update,
  autoscaling: autoscalingSignal,
  delete: remove,
});

const tokenList = command(
  { summary: "list a pool's agent tokens", options: {}, positionals: ["POOL_ID"], required: 1 },
  async (ctx, { values, positionals }) => {
    const { tokens } = await must(
      (await ctx.api()).client.GET("/api/v1/pools/{poolId}/tokens", {
        params: { path: { poolId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(tokens)
        : table([
            ["ID", "DESCRIPTION", "ISSUED BY", "CREATED", "LAST USED", "EXPIRES"],
            ...tokens.map((t) => [
              t.id,
              t.description,
              t.oidc ? `OIDC ${t.oidc.subject ?? t.oidc.issuer}` : "owner",
              t.createdAt,
              cell(t.lastUsedAt),
              cell(t.expiresAt),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const tokenCreate = command(
  {
    summary: "create an agent token (prints the secret once)",
    options: { description: { type: "string", description: "what the token is for" } },
    positionals: ["POOL_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const token = await must(
      (await ctx.api()).client.POST("/api/v1/pools/{poolId}/tokens", {
        params: { path: { poolId: positionals[0] ?? "" } },
        body: { description: values.description ?? "created with the outpost CLI" },
      }),
    );
    // The secret alone on stdout, so `OUTPOST_TOKEN=$(outpost agent-tokens create …)` works.
    ctx.out.write(values.json ? json(token) : `${token.token}\n`);
    ctx.err.write(`Created agent token ${token.id}; the secret is shown only this once\n`);
    return CLI_EXIT.ok;
  },
);

const tokenRevoke = command(
  {
    summary: "revoke an agent token; its agents are told to exit",
    options: {},
    positionals: ["POOL_ID", "TOKEN_ID"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const token = await must(
      (await ctx.api()).client.DELETE("/api/v1/pools/{poolId}/tokens/{tokenId}", {
        params: { path: { poolId: positionals[0] ?? "", tokenId: positionals[1] ?? "" } },
      }),
    );
    ctx.out.write(values.json ? json(token) : "");
    ctx.err.write(`Revoked agent token ${token.id}; its agents are told to exit\n`);
    return CLI_EXIT.ok;
  },
);

export const agentTokens = group("agent tokens of a pool", {
  list: tokenList,
  create: tokenCreate,
  revoke: tokenRevoke,
});
