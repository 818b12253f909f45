/**
 * `outpost admin`: what an operator runs against a deployed coordinator. `reencrypt` is the key
 * rotation step (docs/workspaces.md): after a new key is put first in ENCRYPTION_KEY, it calls
 * `POST /api/v1/organization/reencrypt` (owners) batch after batch until nothing of the
 * organization is sealed with an older key, and says whether the old key may be dropped.
 */
import { must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { json } from "../output.ts";

/** The coordinator's ceiling for one call's batch (MAX_REENCRYPT_BATCH). */
const MAX_BATCH = 500;

type Totals = {
  variables: { reencrypted: number; remaining: number };
  webhookSecrets: { reencrypted: number; remaining: number };
};

function batchFlag(value: string | undefined): number {
  if (value === undefined) {
    return 100;
  }
  const batch = Number(value);
  if (!/^\d+$/.test(value) || batch < 1 || batch > MAX_BATCH) {
    throw new UsageError(`--batch must be a whole number from 1 to ${MAX_BATCH}`);
  }
  return batch;
}

const reencrypt = command(
  {
    summary: "key rotation: seal the organization's secrets again with the first ENCRYPTION_KEY",
    options: {
      batch: { type: "string", description: `values per request (1–${MAX_BATCH}, default 100)` },
    },
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const limit = batchFlag(values.batch);
    const { client } = await ctx.api();
    const totals: Totals = {
      variables: { reencrypted: 0, remaining: 0 },
      webhookSecrets: { reencrypted: 0, remaining: 0 },
    };
    // Each call seals a batch again; stop once nothing remains, or a call moves nothing (what
    // remains then does not open with the current ring: its key was already dropped).
    for (;;) {
      const step = await must(client.POST("/api/v1/organization/reencrypt", { body: { limit } }));
      for (const kind of ["variables", "webhookSecrets"] as const) {
        totals[kind].reencrypted += step[kind].reencrypted;
        totals[kind].remaining = step[kind].remaining;
      }
      const moved = step.variables.reencrypted + step.webhookSecrets.reencrypted;
      const left = step.variables.remaining + step.webhookSecrets.remaining;
      if (moved > 0 && left > 0) {
        ctx.err.write(`re-encrypted ${moved}; ${left} to go\n`);
        continue;
      }
      break;
    }
    const { variables, webhookSecrets } = totals;
    ctx.out.write(
      values.json
        ? json(totals)
        : `Re-encrypted ${variables.reencrypted} sensitive variable(s) and ${webhookSecrets.reencrypted} webhook secret(s) with the first key of ENCRYPTION_KEY\n`,
    );
    if (variables.remaining + webhookSecrets.remaining > 0) {
      ctx.err.write(
        `outpost: ${variables.remaining} sensitive variable(s) and ${webhookSecrets.remaining} webhook secret(s) are still sealed with another key and do not open with the current ENCRYPTION_KEY; keep the old key until they do\n`,
      );
      return CLI_EXIT.requestFailed;
    }
    ctx.err.write(
      "Nothing of this organization is sealed with an older key: once every organization has run this, drop the old key from ENCRYPTION_KEY\n",
    );
    return CLI_EXIT.ok;
  },
);

export const admin = group("operator steps: key rotation", { reencrypt });
