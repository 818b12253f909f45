/**
 * The auth cases every route must pass, in one place so none can be forgotten: no token, a
 * malformed header, an unknown token, a revoked token, each role below the required one, and a
 * valid token of another organization against this organization's ids (404, never 403). Every
 * refused request must leave D1 exactly as it was. Workspace routes also pass the team-access
 * matrix ({@link describeAccess}): each access level below the route's, for people and team tokens.
 */
import { describe, expect, it } from "vitest";
import { ACCESS_LEVELS, type AccessLevel } from "../../../src/authz/model.ts";
import { ROLES, type Role } from "../../../src/tokens/model.ts";
import { type ErrorBody, type RequestOptions, requestJson } from "./api.ts";
import { snapshotD1 } from "./d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./fixtures.ts";
import { personWithAccess, personWithProjectAccess } from "./people.ts";

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

type JsonApiErrors = { errors: { status: string; code: string; meta: { requestId: string } }[] };

/**
 * The code and request id of a refusal, from Outpost's envelope or, on `/api/v2`, from a
 * JSON:API `errors` document (whose `status` must then match the answer's).
 */
function errorOf(body: ErrorBody | JsonApiErrors): { code: string; requestId: unknown } {
  if ("errors" in body) {
    const [first] = body.errors;
    expect(body.errors).toHaveLength(1);
    return { code: first?.code ?? "", requestId: first?.meta.requestId };
  }
  return body.error;
}

async function expectRefused(
  target: AuthTarget,
  options: RequestOptions,
  status: number,
  code: string,
): Promise<void> {
  const before = await snapshotD1();
  const res = await requestJson<ErrorBody | JsonApiErrors>(target.path, {
    method: target.method,
    body: target.body,
    ...options,
    headers: { ...target.headers, ...options.headers },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  const error = errorOf(res.body);
  expect(error.code).toBe(code);
  expect(error.requestId).toEqual(expect.any(String));
  expect(await snapshotD1()).toEqual(before);
}

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

export type AccessCase = {
  /**
   * Builds the request against a workspace of `org` the case creates; called once for the
   * refusals and again for each allowed caller, since an allowed request may change things.
   */
  target: (org: TestOrg) => Promise<AuthTarget & { workspaceId: string }>;
  /** The lowest team access the route needs. */
  level: AccessLevel;
  /** The status the request answers once allowed. */
  allowedStatus: number;
  /** Another way to send the token (basic auth for the state backend). */
  authScheme?: (token: string) => Record<string, string>;
};

export type ProjectAccessCase = {
  /**
   * Builds the request against a project of `org` the case creates; called once for the
   * refusals and again for each allowed caller, since an allowed request may change things.
   */
  target: (org: TestOrg) => Promise<AuthTarget & { projectId: string }>;
  /** The lowest project team access the route needs. */
  level: AccessLevel;
  /** The status the request answers once allowed. */
  allowedStatus: number;
};

async function expectAnswer(
  target: AuthTarget,
  headers: Record<string, string>,
  status: number,
): Promise<void> {
  const res = await requestJson<ErrorBody>(target.path, {
    method: target.method,
    body: target.body,
    headers: { ...target.headers, ...headers },
  });
  expect(res.status, `${target.method} ${target.path}: ${JSON.stringify(res.body)}`).toBe(status);
}

/**
 * Registers the team-access matrix of one workspace route as a `describe` block, for people (a
 * personal token) and team tokens alike, neither with an organization role: without access to
 * the workspace it is not found (404), below the route's level it is forbidden (403), at the
 * level it is allowed. Every refusal must leave D1 as it was.
 */
export function describeAccess(name: string, accessCase: AccessCase): void {
  describe(`${name}: team access`, () => {
    const header = (token: string) =>
      accessCase.authScheme ? accessCase.authScheme(token) : { authorization: `Bearer ${token}` };
    const home = once(async () => {
      const org = await seedOrg();
      return { org, target: await accessCase.target(org) };
    });
    const below = ACCESS_LEVELS.slice(0, ACCESS_LEVELS.indexOf(accessCase.level));

    it("answers 404 to a person and a team token without access to the workspace", async () => {
      const { org, target } = await home();
      const { user, team } = await personWithAccess(org, { id: target.workspaceId }, null);
      for (const token of [user.token, team.token]) {
        await expectRefused(target, { headers: header(token) }, 404, "NOT_FOUND");
      }
    });

    if (below.length > 0) {
      it(`refuses ${below.join(", ")} access (403), for a person and a team token`, async () => {
        const { org, target } = await home();
        for (const level of below) {
          const { user, team } = await personWithAccess(org, { id: target.workspaceId }, level);
          for (const token of [user.token, team.token]) {
            await expectRefused(target, { headers: header(token) }, 403, "FORBIDDEN");
          }
        }
      });
    }

    it(`allows ${accessCase.level} access, for a person and a team token`, async () => {
      const { org } = await home();
      for (const who of ["user", "team"] as const) {
        const target = await accessCase.target(org);
        const access = await personWithAccess(org, { id: target.workspaceId }, accessCase.level);
        const token = who === "user" ? access.user.token : access.team.token;
        await expectAnswer(target, header(token), accessCase.allowedStatus);
      }
    });
  });
}

/**
 * The team-access matrix of one project route, for people (a personal token) and team tokens,
 * neither with an organization role: without access to the project it is not found (404), below
 * the route's level forbidden (403), at the level allowed. Every refusal leaves D1 as it was.
 */
export function describeProjectAccess(name: string, accessCase: ProjectAccessCase): void {
  describe(`${name}: project team access`, () => {
    const header = (token: string) => ({ authorization: `Bearer ${token}` });
    const home = once(async () => {
      const org = await seedOrg();
      return { org, target: await accessCase.target(org) };
    });
    const below = ACCESS_LEVELS.slice(0, ACCESS_LEVELS.indexOf(accessCase.level));

    it("answers 404 to a person and a team token without access to the project", async () => {
      const { org, target } = await home();
      const { user, team } = await personWithProjectAccess(org, { id: target.projectId }, null);
      for (const token of [user.token, team.token]) {
        await expectRefused(target, { headers: header(token) }, 404, "NOT_FOUND");
      }
    });

    if (below.length > 0) {
      it(`refuses ${below.join(", ")} access (403), for a person and a team token`, async () => {
        const { org, target } = await home();
        for (const level of below) {
          const access = await personWithProjectAccess(org, { id: target.projectId }, level);
          for (const token of [access.user.token, access.team.token]) {
            await expectRefused(target, { headers: header(token) }, 403, "FORBIDDEN");
          }
        }
      });
    }

    it(`allows ${accessCase.level} access, for a person and a team token`, async () => {
      const { org } = await home();
      for (const who of ["user", "team"] as const) {
        const target = await accessCase.target(org);
        const access = await personWithProjectAccess(
          org,
          { id: target.projectId },
          accessCase.level,
        );
        const token = who === "user" ? access.user.token : access.team.token;
        await expectAnswer(target, header(token), accessCase.allowedStatus);
      }
    });
  });
}
