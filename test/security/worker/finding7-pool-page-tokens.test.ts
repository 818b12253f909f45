/**
 * Finding 7: the dashboard's pool page showed agent-token metadata (descriptions, creation and
 * last use, revocation) to reader and member sessions, while the API rightly limits it to
 * owners. Now it is rendered for owners only, on every page and fragment.
 */
import { describe, expect, it } from "vitest";
import { newApp } from "../../../src/app.ts";
import { systemClock } from "../../../src/deps.ts";
import { requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { signIn } from "../../worker/helpers/ui.ts";
import { runnableWithAgent } from "./helpers.ts";

const DESCRIPTION = "rack-4-behind-the-firewall";

/** Every dashboard page a signed-in session can GET, with ids filled in. */
function dashboardPages(ids: Record<string, string>): string[] {
  const pages = new Set<string>();
  for (const route of newApp(systemClock).routes) {
    if (route.method === "GET" && route.path.startsWith("/ui/") && !route.path.includes("*")) {
      pages.add(route.path.replace(/:(\w+)(\{[^}]*\})?/g, (_, name: string) => ids[name] ?? "x"));
    }
  }
  return [...pages].filter((p) => !p.startsWith("/ui/static/") && p !== "/ui/login");
}

describe("finding 7: agent-token metadata is rendered for owners only", () => {
  it("no page or fragment shows it to reader, member or admin sessions; the owner sees it", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const made = await requestJson(`/api/v1/pools/${target.poolId}/tokens`, {
      method: "POST",
      token: org.tokens.owner,
      body: { description: DESCRIPTION },
    });
    expect(made.status).toBe(201);
    const pages = dashboardPages({
      poolId: target.poolId,
      workspaceId: target.workspace.id,
      runId: "run_aaaaaaaaaaaaaaaaaaaaaaaaaa",
    });
    expect(pages).toContain(`/ui/pools/${target.poolId}`);
    for (const role of ["reader", "member", "admin"] as const) {
      const session = await signIn(org.tokens[role]);
      for (const page of pages) {
        const res = await session.get(page);
        const html = await res.text();
        expect(html, `${role} ${page}`).not.toContain(DESCRIPTION);
        expect(html, `${role} ${page}`).not.toContain("Agent tokens");
      }
    }
    const owner = await signIn(org.tokens.owner);
    const html = await (await owner.get(`/ui/pools/${target.poolId}`)).text();
    expect(html).toContain(DESCRIPTION);
  });
});
