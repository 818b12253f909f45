/**
 * The body of `POST /api/v2/runs` as go-tfe writes it (`RunCreateOptions`), and what it means
 * for an Outpost run: the operation (`is-destroy`, `refresh-only`), a speculative plan
 * (`plan-only`), the plan options (`target-addrs`, `replace-addrs`, `refresh`), auto-apply and
 * the `-var` values (`variables`). What Outpost cannot do is refused in words, never ignored.
 */
import { z } from "@hono/zod-openapi";
import { invalidInput, type Outcome } from "../lib/reason.ts";
import type { RunOperation } from "../runs/model.ts";
import type { RunVariable } from "../runs/run-variables.ts";

/**
 * A resource address as Terraform prints it (`module.a.aws_instance.b["k"]`): printable, no
 * leading dash, so it can never be read as another flag of the agent's `plan`.
 */
const Address = z
  .string()
  .min(1)
  .max(1000)
  .regex(/^[A-Za-z_][^\p{Cc}]*$/u, "must be a resource address such as aws_instance.web");

const Variable = z.object({
  key: z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,127}$/, "must be a Terraform variable name"),
  value: z.string().max(65_536),
});

const Identifier = (type: string, pattern: RegExp, what: string) =>
  z.object({ data: z.object({ type: z.literal(type), id: z.string().regex(pattern, what) }) });

export const RunDocument = z
  .object({
    data: z.object({
      type: z.literal("runs"),
      attributes: z
        .object({
          message: z.string().max(2000).optional(),
          "is-destroy": z.boolean().optional(),
          "refresh-only": z.boolean().optional(),
          refresh: z.boolean().optional(),
          "plan-only": z.boolean().optional(),
          "auto-apply": z.boolean().optional(),
          "allow-empty-apply": z.boolean().optional(),
          "target-addrs": z.array(Address).max(100).optional(),
          "replace-addrs": z.array(Address).max(100).optional(),
          variables: z.array(Variable).max(200).optional(),
          "save-plan": z.boolean().optional(),
          "terraform-version": z.string().optional(),
          "allow-config-generation": z.boolean().optional(),
        })
        .default({}),
      relationships: z.object({
        workspace: Identifier("workspaces", /^ws_[a-z2-7]{26}$/, "must be a ws_ id"),
        "configuration-version": Identifier(
          "configuration-versions",
          /^cv_[a-z2-7]{26}$/,
          "must be a cv_ id",
        ).optional(),
      }),
    }),
  })
  .openapi("TfeRunDocument");
export type RunDocument = z.infer<typeof RunDocument>;

/** What a run document asks of Outpost's `createRun`. */
export type RunOptions = {
  workspaceId: string;
  configurationVersionId: string | undefined;
  operation: RunOperation;
  isSpeculative: boolean;
  message: string;
  allowEmptyApply: boolean;
  autoApply: boolean | undefined;
  planOptions: { targetAddrs: string[]; replaceAddrs: string[]; refresh: boolean };
  variables: RunVariable[];
};

const at = (name: string) => `json.data.attributes.${name}`;

/** The run a document asks for, or why it cannot be queued (`invalid`, a sentence). */
export function runOptionsOf(document: RunDocument): Outcome<RunOptions, "invalid"> {
  const { attributes: a, relationships } = document.data;
  if (a["is-destroy"] === true && a["refresh-only"] === true) {
    return invalidInput(at("refresh-only"), "a run is either is-destroy or refresh-only, not both");
  }
  if (a["refresh-only"] === true && a.refresh === false) {
    return invalidInput(at("refresh"), "a refresh-only run refreshes: refresh cannot be false");
  }
  if (a["save-plan"] === true) {
    return invalidInput(at("save-plan"), "saved cloud plans (plan -out) are not supported");
  }
  if (a["terraform-version"] !== undefined) {
    return invalidInput(
      at("terraform-version"),
      "a run uses its workspace's terraform-version: change the workspace's instead",
    );
  }
  if (a["allow-config-generation"] === true) {
    return invalidInput(
      at("allow-config-generation"),
      "generating configuration for import blocks (-generate-config-out) is not supported",
    );
  }
  const keys = (a.variables ?? []).map((v) => v.key);
  const repeated = keys.find((key, i) => keys.indexOf(key) !== i);
  if (repeated !== undefined) {
    return invalidInput(at("variables"), `variable ${repeated} is given twice`);
  }
  const operation: RunOperation =
    a["is-destroy"] === true ? "destroy" : a["refresh-only"] === true ? "refresh" : "apply";
  return {
    ok: true,
    value: {
      workspaceId: relationships.workspace.data.id,
      configurationVersionId: relationships["configuration-version"]?.data.id,
      operation,
      isSpeculative: a["plan-only"] === true,
      message: a.message ?? "Queued through the TFE API",
      allowEmptyApply: a["allow-empty-apply"] ?? false,
      autoApply: a["auto-apply"],
      planOptions: {
        targetAddrs: a["target-addrs"] ?? [],
        replaceAddrs: a["replace-addrs"] ?? [],
        refresh: a.refresh ?? true,
      },
      variables: a.variables ?? [],
    },
  };
}
