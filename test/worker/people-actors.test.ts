/**
 * People are named everywhere: runs keep who queued and canceled them, state versions who wrote
 * them, audit events the actor, its name and how it signed in; VCS runs name the VCS.
 */
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { auditEvents } from "../../src/db/schema.ts";
import { requestJson } from "./helpers/api.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { personWithAccess, seedUser } from "./helpers/people.ts";
import { runnableWorkspace } from "./helpers/runs.ts";
import { BackendClient, seedWorkspace, stateJson } from "./helpers/state-fixtures.ts";

type Actor = { type: string; id: string; name: string };
type RunBody = {
  id: string;
  createdBy: Actor | null;
  canceledBy: Actor | null;
  statusReason: string | null;
};

describe("actors", () => {
  it("a run names the person who queued it and the team that canceled it, never a token id", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const { user, team } = await personWithAccess(org, workspace, "write");
    const queued = await requestJson<RunBody>(`/api/v1/workspaces/${workspace.id}/runs`, {
      method: "POST",
      token: user.token,
      body: { operation: "apply" },
    });
    expect(queued.status).toBe(201);
    expect(queued.body.createdBy).toEqual({ type: "user", id: user.userId, name: user.email });
    const canceled = await requestJson<RunBody>(`/api/v1/runs/${queued.body.id}/cancel`, {
      method: "POST",
      token: team.token,
    });
    expect(canceled.status).toBe(200);
    expect(canceled.body.canceledBy).toMatchObject({
      type: "team",
      id: team.teamId,
      name: team.name,
    });
    expect(canceled.body.statusReason).toBe(`canceled by ${team.name}`);
    const [event] = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.targetId, queued.body.id), eq(auditEvents.action, "run.create")));
    expect(event).toMatchObject({ actor: user.userId, actorType: "user", actorVia: "user-token" });
  });

  it("a state version names the person who wrote it", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org);
    const { user } = await personWithAccess(org, { id }, "write");
    const res = await new BackendClient(id, user.token).put(stateJson({ serial: 1, lineage: "l" }));
    expect(res.status).toBe(200);
    const versions = await requestJson<{ stateVersions: { createdBy: Actor }[] }>(
      `/api/v1/workspaces/${id}/state-versions`,
      { token: org.ownerToken },
    );
    expect(versions.body.stateVersions[0]?.createdBy).toEqual({
      type: "user",
      id: user.userId,
      name: user.email,
    });
  });

  it("an org token acting is named by its description and how it came (bearer)", async () => {
    const org = await seedOrg();
    const named = await seedUser(org);
    await requestJson(`/api/v1/users/${named.userId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: true },
    });
    const [event] = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.targetId, named.userId), eq(auditEvents.action, "user.disable")));
    expect(event).toMatchObject({ actorType: "org-token", actorVia: "org-token" });
    expect(event?.actorName).toMatch(/owner token/);
  });
});
