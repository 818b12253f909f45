/**
 * The user-API answers the CLI reads. Loose objects: the CLI checks the fields it uses and keeps
 * the rest (printed as is with `--json`), so a newer coordinator adding fields breaks nothing.
 */

import { RUN_STATUSES } from "@outpost/protocol";
import { z } from "zod";

export const Run = z.looseObject({
  id: z.string(),
  workspaceId: z.string(),
  status: z.enum(RUN_STATUSES),
  statusReason: z.string().nullable(),
  waitingReason: z.string().nullable(),
  operation: z.string(),
  isSpeculative: z.boolean(),
  isAutoApply: z.boolean(),
  planSummary: z.record(z.string(), z.unknown()).nullable(),
  isTerminal: z.boolean(),
  createdAt: z.string().nullable(),
});
export type Run = z.infer<typeof Run>;
export const RunList = z.looseObject({ runs: z.array(Run), nextCursor: z.string().nullable() });

export const Organization = z.looseObject({ id: z.string(), name: z.string(), role: z.string() });

export const Pool = z.looseObject({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  unknownAfterSeconds: z.number(),
  erroredAfterSeconds: z.number(),
  retentionSeconds: z.number(),
});
export const PoolList = z.looseObject({ pools: z.array(Pool) });
export const PoolDetail = Pool.extend({
  agents: z.array(
    z.looseObject({
      id: z.string(),
      name: z.string().nullable(),
      status: z.string(),
      version: z.string(),
      capacity: z.number(),
      runningJobs: z.array(z.looseObject({ jobId: z.string() })),
      lastContactAt: z.string(),
    }),
  ),
  workspaces: z.array(z.looseObject({ id: z.string(), name: z.string() })),
});

export const AgentToken = z.looseObject({
  id: z.string(),
  poolId: z.string(),
  description: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export const AgentTokenList = z.looseObject({ tokens: z.array(AgentToken) });
export const CreatedAgentToken = AgentToken.extend({ token: z.string() });

export const Workspace = z.looseObject({
  id: z.string(),
  name: z.string(),
  executionMode: z.string(),
  poolId: z.string().nullable(),
  engine: z.string(),
  engineVersion: z.string(),
  workingDirectory: z.string(),
  autoApply: z.boolean(),
  lock: z.looseObject({ lockedBy: z.string(), reason: z.string() }).nullable(),
  currentRunId: z.string().nullable(),
});
export type Workspace = z.infer<typeof Workspace>;
export const WorkspaceList = z.looseObject({
  workspaces: z.array(Workspace),
  nextCursor: z.string().nullable(),
});

export const Variable = z.looseObject({
  key: z.string(),
  category: z.enum(["env", "terraform"]),
  value: z.string().nullable(),
  hcl: z.boolean(),
  sensitive: z.boolean(),
});
export const VariableList = z.looseObject({ variables: z.array(Variable) });

export const ConfigurationVersion = z.looseObject({
  id: z.string(),
  sha256: z.string().nullable(),
  sizeBytes: z.number().nullable(),
});
