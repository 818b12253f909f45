/**
 * The dashboard's OpenID Connect pieces: a pool's OIDC trusts (owners add and remove them, through
 * the same rules as the API), agent tokens listed as issued by OIDC with their subject and expiry,
 * and a workspace's workload identity setting (admins).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addTrust, exchange, TestIssuer } from "./helpers/oidc.ts";
import { seedPool } from "./helpers/pools.ts";
import { runnableWorkspace } from "./helpers/runs.ts";
import { signIn, type UiSession } from "./helpers/ui.ts";

let org: TestOrg;
let owner: UiSession;
let admin: UiSession;
let member: UiSession;

beforeAll(async () => {
  org = await seedOrg();
  [owner, admin, member] = await Promise.all([
    signIn(org.ownerToken),
    signIn(org.tokens.admin),
    signIn(org.tokens.member),
  ]);
});

type Trust = { id: string; issuer: string; audience: string; claims: Record<string, string> };

async function apiTrusts(poolId: string): Promise<Trust[]> {
  const res = await requestJson<{ trusts: Trust[] }>(`/api/v1/pools/${poolId}/oidc-trusts`, {
    token: org.ownerToken,
  });
  expect(res.status).toBe(200);
  return res.body.trusts;
}

describe("pool page: OIDC trusts", () => {
  it("owners add a trust from name=pattern lines and see it; other roles see and may do nothing", async () => {
    const { poolId } = await seedPool(org);
    const path = `/ui/pools/${poolId}`;
    expect(await (await owner.get(path)).text()).toContain(`action="${path}/oidc-trusts"`);
    const adminHtml = await (await admin.get(path)).text();
    expect(adminHtml).not.toContain("oidc-trusts");
    const before = await snapshotD1();
    const form = {
      issuer: "https://token.actions.githubusercontent.com",
      audience: "outpost",
      claims: "repository=acme/*",
    };
    for (const session of [admin, member]) {
      expect((await session.post(`${path}/oidc-trusts`, form)).status).toBe(403);
    }
    expect(await snapshotD1()).toEqual(before);

    const added = await owner.post(`${path}/oidc-trusts`, {
      ...form,
      claims:
        "repository = acme/*\r\n\r\njob_workflow_ref=acme/infra/.github/workflows/a.yml@refs/heads/main\n",
      description: "GitHub Actions <runners>",
    });
    expect(added.status).toBe(303);
    const [trust] = await apiTrusts(poolId);
    expect(trust).toMatchObject({
      issuer: form.issuer,
      audience: "outpost",
      claims: {
        repository: "acme/*",
        job_workflow_ref: "acme/infra/.github/workflows/a.yml@refs/heads/main",
      },
    });
    const html = await (await owner.get(added.headers.get("location") ?? "")).text();
    expect(html).toContain("The OIDC trust was added.");
    expect(html).toContain(`<div>repository=acme/*</div>`);
    expect(html).toContain("GitHub Actions &lt;runners&gt;");
    expect(html).toContain(`action="${path}/oidc-trusts/${trust?.id}/delete"`);
  });

  it("refuses what the API refuses, saying why and changing nothing", async () => {
    const { poolId } = await seedPool(org);
    const path = `/ui/pools/${poolId}/oidc-trusts`;
    const before = await snapshotD1();
    const base = { issuer: "https://issuer.example", audience: "outpost" };
    const plainHttp = await owner.post(path, {
      ...base,
      issuer: "http://issuer.example",
      claims: "sub=x",
    });
    expect(plainHttp.status).toBe(400);
    expect(await plainHttp.text()).toContain(
      "The trust was not added: issuer must be an https URL.",
    );
    for (const claims of ["sub", "=x", "sub=a\nsub=b", "sub=*", "iss=https://x", ""]) {
      const res = await owner.post(path, { ...base, claims });
      expect(res.status, claims).toBe(400);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("lists exchange-issued tokens as issued by OIDC with their subject and expiry; removing the trust revokes them", async () => {
    const { poolId } = await seedPool(org);
    const issuer = await TestIssuer.create("ui");
    const trust = await addTrust(org, poolId, {
      issuer: issuer.url,
      audience: "outpost",
      claims: { sub: "ci:*" },
    });
    const exchanged = await exchange(
      poolId,
      await issuer.sign({ aud: "outpost", sub: "ci:runner-3" }),
    );
    expect(exchanged.status).toBe(200);
    const path = `/ui/pools/${poolId}`;
    const html = await (await owner.get(path)).text();
    expect(html).toContain(`OIDC <span class="mono">ci:runner-3</span>`);
    expect(html).toContain(`<time datetime="${exchanged.body.expiresAt}" title=`);
    expect(html).not.toContain(exchanged.body.token);

    expect((await member.post(`${path}/oidc-trusts/${trust.id}/delete`)).status).toBe(403);
    const removed = await owner.post(`${path}/oidc-trusts/${trust.id}/delete`);
    expect(removed.status).toBe(303);
    expect(await apiTrusts(poolId)).toEqual([]);
    const register = await requestJson("/agent/v1/register", {
      method: "POST",
      token: exchanged.body.token,
      body: { version: "0.1.0", os: "linux", arch: "amd64" },
    });
    expect(register.status).toBe(401);
    const again = await owner.post(`${path}/oidc-trusts/${trust.id}/delete`);
    expect(again.status).toBe(404);
  });

  it("answers 404 for another organization's pool or trust", async () => {
    const other = await seedOrg();
    const { poolId } = await seedPool(other);
    const trust = await addTrust(other, poolId, {
      issuer: "https://issuer.example",
      audience: "outpost",
      claims: { sub: "x" },
    });
    const before = await snapshotD1();
    const add = await owner.post(`/ui/pools/${poolId}/oidc-trusts`, {
      issuer: "https://issuer.example",
      audience: "a",
      claims: "sub=y",
    });
    expect(add.status).toBe(404);
    const remove = await owner.post(`/ui/pools/${poolId}/oidc-trusts/${trust.id}/delete`);
    expect(remove.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("workspace page: workload identity", () => {
  it("admins switch it on with an audience and off again; members may not", async () => {
    const { workspace } = await runnableWorkspace(org);
    const path = `/ui/workspaces/${workspace.id}`;
    expect(await (await member.get(path)).text()).not.toContain(`${path}/workload-identity`);
    expect(await (await admin.get(path)).text()).toContain(`action="${path}/workload-identity"`);
    const refused = await member.post(`${path}/workload-identity`, { enabled: "on", audience: "" });
    expect(refused.status).toBe(403);

    const on = await admin.post(`${path}/workload-identity`, {
      enabled: "on",
      audience: "sts.amazonaws.com",
    });
    expect(on.status).toBe(303);
    expect(await (await admin.get(path)).text()).toContain("on, audience sts.amazonaws.com");
    const api = await requestJson<{ workloadIdentity: boolean; workloadIdentityAudience: string }>(
      `/api/v1/workspaces/${workspace.id}`,
      { token: org.ownerToken },
    );
    expect(api.body).toMatchObject({
      workloadIdentity: true,
      workloadIdentityAudience: "sts.amazonaws.com",
    });
    const off = await admin.post(`${path}/workload-identity`, { audience: "" });
    expect(off.status).toBe(303);
    const page = await (await admin.get(path)).text();
    expect(page).toMatch(/<dt>Workload identity<\/dt><dd>off<\/dd>/);
  });
});
