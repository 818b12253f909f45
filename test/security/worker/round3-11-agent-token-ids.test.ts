/**
 * Round three, finding 11: readers saw each agent's `tokenId` in `GET /api/v1/pools/:id`, while
 * docs/security.md says agent-token metadata is the owners'. Now owners see it, every other role
 * sees null.
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { registerAgent, seedPool } from "../../worker/helpers/pools.ts";

type Detail = { agents: { id: string; tokenId: string | null }[] };

describe("GET /api/v1/pools/:id, agents' token ids", () => {
  it("are shown to owners only", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const as = async (token: string) => {
      const res = await requestJson<Detail>(`/api/v1/pools/${pool.poolId}`, { token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.agents;
    };
    expect(await as(org.ownerToken)).toMatchObject([{ id: agentId, tokenId: pool.tokenId }]);
    for (const role of ["admin", "member", "reader"] as const) {
      const agents = await as(org.tokens[role]);
      expect(agents, role).toMatchObject([{ id: agentId, tokenId: null }]);
      expect(JSON.stringify(agents), role).not.toContain(pool.tokenId);
    }
  });
});
