/**
 * The auth cases every route must pass, in one place so none can be forgotten: no token, a
 * malformed header, an unknown token, a revoked token, each role below the required one, and a
 * valid token of another organization against this organization's ids (404, never 403). Every
 * refused request must leave D1 exactly as it was.
 */
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../../src/tokens/model.ts";
import { type ErrorBody, type RequestOptions, requestJson } from "./api.ts";
import { snapshotD1 } from "./d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./fixtures.ts";

export type AuthTarget = {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
};

export type AuthCase = {
  /** Builds the request against resources of `org` (created fresh for the matrix). */
  target: (org: TestOrg) => Promise<AuthTarget> | AuthTarget;
  /** The minimum org role; `null` when the route takes another kind of token. */
  role: Role | null;
  /** Tokens of the right kind for routes that do not take org tokens. */
  tokens?: (org: TestOrg) => Promise<{ revoked: string; otherOrg?: string }>;
  /** False for routes whose path names no org resource (the other-org case then does not apply). */
  hasOrgIds?: boolean;
  /** Extra ways to authenticate that the route accepts, e.g. basic auth. */
  authScheme?: (token: string) => Record<string, string>;
};

const UNKNOWN_ORG_TOKEN = `op_org_${"A".repeat(43)}`;

async function expectRefused(
  target: AuthTarget,
  options: RequestOptions,
  status: number,
  code: string,
): Promise<void> {
  const before = await snapshotD1();
  const res = await requestJson<ErrorBody>(target.path, {
    method: target.method,
    body: target.body,
    ...options,
    headers: { ...target.headers, ...options.headers },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.requestId).toEqual(expect.any(String));
  expect(await snapshotD1()).toEqual(before);
}

/** Registers the auth matrix for one route as a `describe` block. */
/** Runs `make` once and hands every caller the same promise. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/**
 * Registers the auth matrix for one route as a `describe` block. The organization, the target
 * and the tokens are built once per block: every case is a refused request that must change
 * nothing (which each case checks), so sharing them is safe and keeps the matrix cheap.
 */
export function describeAuth(name: string, authCase: AuthCase): void {
  describe(`${name}: auth`, () => {
    const header = (token: string) =>
      authCase.authScheme ? authCase.authScheme(token) : { authorization: `Bearer ${token}` };
    const home = once(async () => {
      const org = await seedOrg();
      return { org, target: await authCase.target(org) };
    });
    const revokedToken = once(async () => {
      const { org } = await home();
      return authCase.tokens ? (await authCase.tokens(org)).revoked : org.revokedToken;
    });
    const foreignToken = once(async () => {
      const other = await seedOrg();
      return authCase.tokens
        ? (await authCase.tokens(other)).otherOrg
        : other.tokens[authCase.role ?? "owner"];
    });

    it("refuses a request without a token (401)", async () => {
      const { target } = await home();
      await expectRefused(target, {}, 401, "UNAUTHORIZED");
    });

    it("refuses a malformed Authorization header (401)", async () => {
      const { target } = await home();
      for (const value of ["Bearer", "Token abc", "Bearer a b", "Basic !!!"]) {
        await expectRefused(target, { headers: { authorization: value } }, 401, "UNAUTHORIZED");
      }
    });

    it("refuses an unknown token (401)", async () => {
      const { target } = await home();
      await expectRefused(target, { headers: header(UNKNOWN_ORG_TOKEN) }, 401, "UNAUTHORIZED");
      await expectRefused(target, { headers: header("op_agent_short") }, 401, "UNAUTHORIZED");
    });

    it("refuses a revoked token (401 TOKEN_REVOKED)", async () => {
      const { target } = await home();
      await expectRefused(target, { headers: header(await revokedToken()) }, 401, "TOKEN_REVOKED");
    });

    if (authCase.role !== null) {
      const required = authCase.role;
      const weaker = ROLES.slice(ROLES.indexOf(required) + 1);
      if (weaker.length > 0) {
        it(`refuses roles below ${required} (403)`, async () => {
          const { org, target } = await home();
          for (const role of weaker) {
            await expectRefused(target, { headers: header(org.tokens[role]) }, 403, "FORBIDDEN");
          }
        });
      }
    } else {
      it("refuses an org token where another kind is required (401)", async () => {
        const { org, target } = await home();
        await expectRefused(target, { headers: header(org.ownerToken) }, 401, "UNAUTHORIZED");
      });
    }

    if (authCase.hasOrgIds !== false) {
      it("answers 404 for another organization's ids", async () => {
        const { target } = await home();
        const token = await foreignToken();
        if (!token) {
          throw new Error("the auth case gives no token of another organization");
        }
        await expectRefused(target, { headers: header(token) }, 404, "NOT_FOUND");
      });
    }
  });
}
