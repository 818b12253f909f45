/**
 * The permission matrix: every workspace route through the real routes, for people (personal
 * tokens) and team tokens without an organization role, at each team access level below the
 * route's (403), without access (404) and at the level (allowed). Org tokens keep the matrix
 * of each route's own test file (describeAuth), unchanged.
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { describeAccess } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { grant, personWithAccess, seedTeam } from "./helpers/people.ts";
import {
  BackendClient,
  basicAuth,
  lockInfo,
  seedRun,
  seedWorkspace,
  stateJson,
} from "./helpers/state-fixtures.ts";
import { gzip, tar } from "./helpers/tarball.ts";
import { seedRun as seedRunRow } from "./helpers/workspaces.ts";

/** A local workspace of the org with one state version (serial 1) written by its owner. */
async function withState(
  org: TestOrg,
  sensitive = false,
): Promise<{ id: string; versionId: string }> {
  const id = await seedWorkspace(org);
  const client = new BackendClient(id, org.ownerToken);
  const state = stateJson({
    serial: 1,
    lineage: "lineage-1",
    outputs: { secret: { value: "s3cr3t", type: "string", sensitive } },
  });
  const res = await client.put(state);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { stateVersionId: string };
  return { id, versionId: body.stateVersionId };
}

async function tarball(): Promise<Uint8Array> {
  return gzip(tar([{ name: "main.tf", body: "terraform {}\n" }]));
}

const ws = async (org: TestOrg) => seedWorkspace(org);

describeAccess("GET /api/v1/workspaces/:id", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}` };
  },
});
describeAccess("PATCH /api/v1/workspaces/:id", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "PATCH",
      path: `/api/v1/workspaces/${id}`,
      body: { description: "x" },
    };
  },
});
describeAccess("DELETE /api/v1/workspaces/:id", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "DELETE", path: `/api/v1/workspaces/${id}` };
  },
});
describeAccess("POST /api/v1/workspaces/:id/lock", {
  level: "write",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "POST",
      path: `/api/v1/workspaces/${id}/lock`,
      body: { reason: "r" },
    };
  },
});
describeAccess("POST /api/v1/workspaces/:id/unlock", {
  level: "write",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "POST", path: `/api/v1/workspaces/${id}/unlock` };
  },
});
describeAccess("GET /api/v1/workspaces/:id/vars", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/vars` };
  },
});
describeAccess("PUT /api/v1/workspaces/:id/vars/:key", {
  level: "write",
  allowedStatus: 201,
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "PUT",
      path: `/api/v1/workspaces/${id}/vars/region`,
      body: { value: "eu", category: "env" },
    };
  },
});
describeAccess("DELETE /api/v1/workspaces/:id/vars/:key", {
  level: "write",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    const put = await requestJson(`/api/v1/workspaces/${id}/vars/region`, {
      method: "PUT",
      token: org.ownerToken,
      body: { value: "eu", category: "env" },
    });
    expect(put.status).toBe(201);
    return { workspaceId: id, method: "DELETE", path: `/api/v1/workspaces/${id}/vars/region` };
  },
});
describeAccess("POST /api/v1/workspaces/:id/configuration-versions", {
  level: "plan",
  allowedStatus: 201,
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "POST",
      path: `/api/v1/workspaces/${id}/configuration-versions`,
      body: await tarball(),
      headers: { "content-type": "application/gzip" },
    };
  },
});
describeAccess("GET /api/v1/workspaces/:id/configuration-versions", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "GET",
      path: `/api/v1/workspaces/${id}/configuration-versions`,
    };
  },
});
describeAccess(
  "POST /api/v1/workspaces/:id/runs (a local workspace refuses the run once allowed)",
  {
    level: "plan",
    allowedStatus: 409,
    target: async (org) => {
      const id = await ws(org);
      return {
        workspaceId: id,
        method: "POST",
        path: `/api/v1/workspaces/${id}/runs`,
        body: { operation: "plan" },
      };
    },
  },
);
describeAccess("GET /api/v1/workspaces/:id/runs", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/runs` };
  },
});
describeAccess("GET /api/v1/runs/:id", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    const runId = await seedRunRow(org.orgId, id, "planned");
    return { workspaceId: id, method: "GET", path: `/api/v1/runs/${runId}` };
  },
});
describeAccess("GET /api/v1/runs/:id/logs", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    const runId = await seedRunRow(org.orgId, id, "planned");
    return { workspaceId: id, method: "GET", path: `/api/v1/runs/${runId}/logs` };
  },
});
for (const action of ["confirm", "discard", "cancel", "force-cancel"]) {
  describeAccess(`POST /api/v1/runs/:id/${action} (allowed, a terminal run refuses it)`, {
    level: "write",
    allowedStatus: 409,
    target: async (org) => {
      const id = await ws(org);
      const runId = await seedRunRow(org.orgId, id, "applied");
      return { workspaceId: id, method: "POST", path: `/api/v1/runs/${runId}/${action}` };
    },
  });
}
describeAccess("GET /api/v1/workspaces/:id/state-versions", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const { id } = await withState(org);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/state-versions` };
  },
});
describeAccess("GET /api/v1/workspaces/:id/outputs (sensitive values hidden)", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const { id } = await withState(org, true);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/outputs` };
  },
});
describeAccess("GET /api/v1/workspaces/:id/outputs?reveal=true", {
  level: "write",
  allowedStatus: 200,
  target: async (org) => {
    const { id } = await withState(org, true);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/outputs?reveal=true` };
  },
});
describeAccess("GET /api/v1/workspaces/:id/state-versions/:id/download", {
  level: "write",
  allowedStatus: 200,
  target: async (org) => {
    const { id, versionId } = await withState(org);
    return {
      workspaceId: id,
      method: "GET",
      path: `/api/v1/workspaces/${id}/state-versions/${versionId}/download`,
    };
  },
});
describeAccess(
  "POST /api/v1/workspaces/:id/state-versions/:id/rollback (allowed, the current version refuses it)",
  {
    level: "admin",
    allowedStatus: 409,
    target: async (org) => {
      const { id, versionId } = await withState(org);
      return {
        workspaceId: id,
        method: "POST",
        path: `/api/v1/workspaces/${id}/state-versions/${versionId}/rollback`,
      };
    },
  },
);
describeAccess("DELETE /api/v1/workspaces/:id/state-lock", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "DELETE", path: `/api/v1/workspaces/${id}/state-lock` };
  },
});
describeAccess("GET /state/v1/:id (the state body)", {
  level: "write",
  allowedStatus: 200,
  authScheme: (token) => basicAuth(token),
  target: async (org) => {
    const { id } = await withState(org);
    return { workspaceId: id, method: "GET", path: `/state/v1/${id}` };
  },
});
describeAccess("LOCK /state/v1/:id", {
  level: "write",
  allowedStatus: 200,
  authScheme: (token) => basicAuth(token),
  target: async (org) => {
    const id = await ws(org);
    return {
      workspaceId: id,
      method: "LOCK",
      path: `/state/v1/${id}`,
      body: JSON.stringify(lockInfo()),
      headers: { "content-type": "application/json" },
    };
  },
});
describeAccess("DELETE /state/v1/:id", {
  level: "admin",
  allowedStatus: 200,
  authScheme: (token) => basicAuth(token),
  target: async (org) => {
    const { id } = await withState(org);
    return { workspaceId: id, method: "DELETE", path: `/state/v1/${id}` };
  },
});
describeAccess("GET /api/v1/workspaces/:id/team-access", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    return { workspaceId: id, method: "GET", path: `/api/v1/workspaces/${id}/team-access` };
  },
});
describeAccess("PUT /api/v1/workspaces/:id/team-access/:teamId", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const id = await ws(org);
    const other = await seedTeam(org);
    return {
      workspaceId: id,
      method: "PUT",
      path: `/api/v1/workspaces/${id}/team-access/${other.teamId}`,
      body: { access: "read" },
    };
  },
});

describe("what a team's access leaves out", () => {
  it("lists, searches and run lists show only the workspaces a person's teams may read", async () => {
    const org = await seedOrg();
    const seen = await seedWorkspace(org);
    const hidden = await seedWorkspace(org);
    const { user } = await personWithAccess(org, { id: seen }, "read");
    const seenRun = await seedRunRow(org.orgId, seen, "planned");
    const hiddenRun = await seedRunRow(org.orgId, hidden, "planned");
    const list = await requestJson<{ workspaces: { id: string }[] }>("/api/v1/workspaces", {
      token: user.token,
    });
    expect(list.body.workspaces.map((w) => w.id)).toEqual([seen]);
    const search = await requestJson<{ workspaces: { id: string }[] }>(
      "/api/v1/workspaces?search=ws-",
      {
        token: user.token,
      },
    );
    expect(search.body.workspaces.map((w) => w.id)).toEqual([seen]);
    const runs = await requestJson<{ runs: { id: string }[] }>("/api/v1/runs", {
      token: user.token,
    });
    expect(runs.body.runs.map((r) => r.id)).toEqual([seenRun]);
    const hiddenRunRes = await requestJson(`/api/v1/runs/${hiddenRun}`, { token: user.token });
    expect(hiddenRunRes.status).toBe(404);
    // An org token of any role sees everything, as before teams existed.
    const all = await requestJson<{ runs: { id: string }[] }>("/api/v1/runs", {
      token: org.tokens.reader,
    });
    expect(all.body.runs.map((r) => r.id).sort()).toEqual([seenRun, hiddenRun].sort());
  });

  it("takes the higher of the organization role and the team access", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org);
    const reader = await seedTeam(org, { role: "reader" });
    // reader role alone: reads, may not lock
    let res = await requestJson(`/api/v1/workspaces/${id}/lock`, {
      method: "POST",
      token: reader.token,
      body: { reason: "r" },
    });
    expect(res.status).toBe(403);
    await grant(org, { id }, reader, "write");
    res = await requestJson(`/api/v1/workspaces/${id}/lock`, {
      method: "POST",
      token: reader.token,
      body: { reason: "r" },
    });
    expect(res.status).toBe(200);
  });

  it("a write team of a run's workspace confirms it; a plan team is refused and changes nothing", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org);
    const runId = await seedRunRow(org.orgId, id, "applied");
    const { team: planTeam } = await personWithAccess(org, { id }, "plan");
    const refused = await requestJson<{ error: { message: string } }>(
      `/api/v1/runs/${runId}/confirm`,
      {
        method: "POST",
        token: planTeam.token,
      },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/write access/);
  });

  it("a run token keeps its own narrow rules", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org);
    const run = await seedRun(org, id);
    const res = await requestJson(`/api/v1/workspaces/${id}`, { token: run.token });
    expect(res.status).toBe(401);
  });
});
