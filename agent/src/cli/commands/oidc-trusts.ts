/**
 * `outpost oidc-trusts`: the OIDC issuers whose tokens log a pool's agents in
 * (`/api/v1/pools/{poolId}/oidc-trusts`, owners only).
 */
import { must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { cell, json, table } from "../output.ts";

/**
 * `--claim NAME=PATTERN` flags as the trust's claim conditions. The first `=` splits, so a
 * pattern may itself hold `=`; a claim named twice is a mistake, not a silent override.
 */
export function claimConditions(flags: readonly string[]): Record<string, string> {
  const claims: Record<string, string> = {};
  for (const flag of flags) {
    const at = flag.indexOf("=");
    if (at <= 0 || at === flag.length - 1) {
      throw new UsageError(
        `--claim ${JSON.stringify(flag)} must be NAME=PATTERN, e.g. --claim 'sub=system:serviceaccount:ci:*'`,
      );
    }
    const name = flag.slice(0, at);
    if (name in claims) {
      throw new UsageError(`--claim names ${name} twice`);
    }
    claims[name] = flag.slice(at + 1);
  }
  return claims;
}

function conditionsText(claims: Record<string, string>): string {
  return Object.entries(claims)
    .map(([name, pattern]) => `${name}=${pattern}`)
    .join(" ");
}

const list = command(
  { summary: "list a pool's OIDC trusts", options: {}, positionals: ["POOL_ID"], required: 1 },
  async (ctx, { values, positionals }) => {
    const { trusts } = await must(
      (await ctx.api()).client.GET("/api/v1/pools/{poolId}/oidc-trusts", {
        params: { path: { poolId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(trusts)
        : table([
            ["ID", "ISSUER", "AUDIENCE", "CLAIMS", "DESCRIPTION"],
            ...trusts.map((t) => [
              t.id,
              t.issuer,
              t.audience,
              conditionsText(t.claims),
              cell(t.description),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const add = command(
  {
    summary: "trust an OIDC issuer: its tokens that meet every --claim log agents in",
    options: {
      issuer: { type: "string", description: "the tokens' iss, an https URL" },
      audience: { type: "string", description: "a value the tokens' aud must contain" },
      claim: {
        type: "strings",
        description: "NAME=PATTERN, exact or with * globs; repeat for more (all must hold)",
      },
      description: { type: "string", description: "what the trust is for" },
    },
    positionals: ["POOL_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const { issuer, audience } = values;
    if (issuer === undefined || audience === undefined) {
      throw new UsageError("give --issuer and --audience (and at least one --claim)");
    }
    const claims = claimConditions(values.claim ?? []);
    if (Object.keys(claims).length === 0) {
      throw new UsageError(
        "give at least one --claim NAME=PATTERN, e.g. --claim 'sub=repo:acme/*'",
      );
    }
    const trust = await must(
      (await ctx.api()).client.POST("/api/v1/pools/{poolId}/oidc-trusts", {
        params: { path: { poolId: positionals[0] ?? "" } },
        body: {
          issuer,
          audience,
          claims,
          ...(values.description === undefined ? {} : { description: values.description }),
        },
      }),
    );
    ctx.out.write(values.json ? json(trust) : `${trust.id}\n`);
    ctx.err.write(`Pool ${trust.poolId} now trusts tokens of ${trust.issuer}\n`);
    return CLI_EXIT.ok;
  },
);

const remove = command(
  {
    summary: "remove a trust; the agent tokens it issued are revoked and their agents exit",
    options: {},
    positionals: ["POOL_ID", "TRUST_ID"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const [poolId = "", trustId = ""] = positionals;
    const result = await must(
      (await ctx.api()).client.DELETE("/api/v1/pools/{poolId}/oidc-trusts/{trustId}", {
        params: { path: { poolId, trustId } },
      }),
    );
    ctx.out.write(values.json ? json(result) : "");
    ctx.err.write(
      `Removed OIDC trust ${trustId}; revoked ${result.revokedTokenIds.length} agent token(s) it had issued\n`,
    );
    return CLI_EXIT.ok;
  },
);

export const oidcTrusts = group("OIDC issuers whose tokens log a pool's agents in", {
  list,
  add,
  remove,
});
