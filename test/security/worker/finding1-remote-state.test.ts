/**
 * Finding 1: a run token read the full state (every resource attribute, every version) of every
 * workspace in its org. Now remote state is outputs only, and opt-in per producer workspace;
 * versions, downloads and locks of another workspace are refused to run tokens.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestJson } from "../../worker/helpers/api.ts";
import { snapshotD1 } from "../../worker/helpers/d1-snapshot.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { BackendClient, lockInfo } from "../../worker/helpers/state-fixtures.ts";
import {
  PRODUCER_RESOURCE_SECRET,
  PRODUCER_SECRET,
  producerWithState,
  readBackend,
  runnableWithAgent,
  shareState,
  startedPlan,
  statusOf,
} from "./helpers.ts";

async function consumerJob() {
  const org = await seedOrg();
  const producer = await producerWithState(org);
  const consumer = await runnableWithAgent(org);
  const { job } = await startedPlan(org, consumer);
  return { org, producer, consumer, token: job.runToken ?? "" };
}

describe("finding 1: remote state is outputs only, and opt-in", () => {
  it("a new workspace shares with nobody: another workspace's job gets 404", async () => {
    const { producer, token } = await consumerJob();
    expect(producer.remoteStateSharing).toBe("none");
    const read = await readBackend(producer.id, token);
    expect(read.status).toBe(404);
    expect(read.text).not.toContain(PRODUCER_RESOURCE_SECRET);
  });

  it("shared with the organization: lineage, serial and outputs (sensitive marked), no resources", async () => {
    const { org, producer, token } = await consumerJob();
    expect((await shareState(org, producer.id, "organization")).status).toBe(200);
    const read = await readBackend(producer.id, token);
    expect(read.status).toBe(200);
    expect(read.text).not.toContain(PRODUCER_RESOURCE_SECRET);
    expect(read.json).toEqual({
      version: 4,
      terraform_version: "1.9.5",
      serial: 3,
      lineage: "producer-lineage",
      outputs: {
        vpc_id: { value: "vpc-0123", type: "string" },
        db_password: { value: PRODUCER_SECRET, type: "string", sensitive: true },
      },
      resources: [],
      check_results: null,
    });
  });

  it("shared with a list: only the listed workspaces' jobs read it", async () => {
    const { org, producer, consumer, token } = await consumerJob();
    const bystander = await runnableWithAgent(org);
    expect(
      (await shareState(org, producer.id, "workspaces", [bystander.workspace.id])).status,
    ).toBe(200);
    expect((await readBackend(producer.id, token)).status).toBe(404);
    const both = [bystander.workspace.id, consumer.workspace.id];
    const shared = await shareState(org, producer.id, "workspaces", both);
    expect(shared.body.remoteStateConsumerIds).toEqual([...both].sort());
    expect((await readBackend(producer.id, token)).status).toBe(200);
    // Back to nobody: the list goes with it.
    const none = await shareState(org, producer.id, "none");
    expect(none.body.remoteStateConsumerIds).toEqual([]);
    expect((await readBackend(producer.id, token)).status).toBe(404);
  });

  it("versions, their downloads, outputs API and locks of another workspace stay refused (404)", async () => {
    const { org, producer, token } = await consumerJob();
    await shareState(org, producer.id, "organization");
    const versions = await env.DB.prepare("SELECT id FROM state_versions WHERE workspace_id = ?")
      .bind(producer.id)
      .first<{ id: string }>();
    const base = `/api/v1/workspaces/${producer.id}`;
    const before = await snapshotD1();
    for (const path of [
      `${base}/state-versions`,
      `${base}/state-versions/${versions?.id}`,
      `${base}/state-versions/${versions?.id}/download`,
      `${base}/state-lock`,
    ]) {
      expect(await statusOf(path, token), path).toBe(404);
    }
    const backend = new BackendClient(producer.id, token);
    expect((await backend.lock(lockInfo())).status).toBe(404);
    expect((await backend.send("UNLOCK", backend.address, "")).status).toBe(404);
    expect((await backend.send("DELETE", backend.address)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });

  it("the sharing setting is validated: unknown or foreign consumers and a list without the mode", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const producer = await producerWithState(org);
    const foreign = await producerWithState(other);
    const before = await snapshotD1();
    const unknown = await shareState(org, producer.id, "workspaces", [`ws_${"a".repeat(26)}`]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain("not found in this organization");
    expect((await shareState(org, producer.id, "workspaces", [foreign.id])).status).toBe(400);
    const listWithoutMode = await shareState(org, producer.id, "organization", [producer.id]);
    expect(listWithoutMode.status).toBe(400);
    expect(listWithoutMode.body.error.message).toContain('needs remoteStateSharing "workspaces"');
    expect(await snapshotD1()).toEqual(before);
    // Only admins change it.
    const byMember = await requestJson(`/api/v1/workspaces/${producer.id}`, {
      method: "PATCH",
      token: org.tokens.member,
      body: { remoteStateSharing: "organization" },
    });
    expect(byMember.status).toBe(403);
  });

  it("workspaces that existed before the migration share with their organization", async () => {
    const org = await seedOrg();
    const old = await producerWithState(org);
    const backfill = env.TEST_MIGRATIONS.find((m) => m.name.includes("least_privilege_backfill"));
    expect(backfill).toBeDefined();
    await env.DB.prepare("UPDATE workspaces SET remote_state_sharing = 'none' WHERE id = ?")
      .bind(old.id)
      .run();
    for (const statement of backfill?.queries ?? []) {
      await env.DB.prepare(statement).run();
    }
    const row = await env.DB.prepare("SELECT remote_state_sharing FROM workspaces WHERE id = ?")
      .bind(old.id)
      .first<{ remote_state_sharing: string }>();
    expect(row?.remote_state_sharing).toBe("organization");
  });
});
