/**
 * Round three, finding 10: readers and members are refused `outputs?reveal=true`, but downloaded
 * the same sensitive outputs through `state-versions/:id/download` (the dashboard's download uses
 * the same service).
 * Below the reveal level a download now has every sensitive output's value set to null; admins
 * and owners still get the body byte for byte.
 */
import { describe, expect, it } from "vitest";
import { request, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { PRODUCER_SECRET, producerWithState } from "./helpers.ts";

type Version = { id: string; md5: string; sizeBytes: number };

async function download(path: string, token: string) {
  const res = await request(path, { token });
  const text = await res.text();
  return {
    status: res.status,
    text,
    md5: res.headers.get("content-md5"),
    length: res.headers.get("content-length"),
  };
}

describe("state-versions/:id/download below the reveal level", () => {
  it("gives readers and members the state with sensitive output values set to null, admins and owners all of it", async () => {
    const org = await seedOrg();
    const ws = await producerWithState(org);
    const list = await requestJson<{ stateVersions: Version[] }>(
      `/api/v1/workspaces/${ws.id}/state-versions`,
      { token: org.tokens.reader },
    );
    const [version] = list.body.stateVersions;
    if (!version) {
      throw new Error("no state version");
    }
    const path = `/api/v1/workspaces/${ws.id}/state-versions/${version.id}/download`;
    for (const role of ["reader", "member"] as const) {
      const res = await download(path, org.tokens[role]);
      expect(res.status, `${role}: ${res.text}`).toBe(200);
      expect(res.text, role).not.toContain(PRODUCER_SECRET);
      const doc = JSON.parse(res.text);
      expect(doc.outputs.db_password, role).toEqual({
        value: null,
        type: "string",
        sensitive: true,
      });
      expect(doc.outputs.vpc_id.value).toBe("vpc-0123");
      expect(doc.serial).toBe(3);
      expect(Number(res.length)).toBe(new TextEncoder().encode(res.text).byteLength);
    }
    for (const token of [org.tokens.admin, org.ownerToken]) {
      const res = await download(path, token);
      expect(res.status).toBe(200);
      expect(res.text).toContain(PRODUCER_SECRET);
      expect(Number(res.length)).toBe(version.sizeBytes);
    }
  });
});
