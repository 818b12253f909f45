import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { z } from "zod";
import { UserError } from "../errors.ts";
import { camel } from "./flags.ts";
import { SETTINGS } from "./settings.ts";

/** `vcsTokens`: per VCS API host, the file holding the token that posts feedback there. */
export const VcsTokensValue = z.record(
  z.string().min(1),
  z.strictObject({ tokenFile: z.string().min(1) }),
);
export type VcsTokensValue = z.infer<typeof VcsTokensValue>;

/** A config file value: what YAML or JSON can hold for a setting. */
export type FileValue = string | number | boolean | string[] | VcsTokensValue;

const FILE_KEYS = SETTINGS.flatMap((s) => ("fileKey" in s ? [s.fileKey] : []));
const ConfigFile = z.strictObject({
  ...Object.fromEntries(
    FILE_KEYS.map((key) => [
      key,
      z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]).optional(),
    ]),
  ),
  vcsTokens: VcsTokensValue.optional(),
});

/**
 * Reads a YAML or JSON config file (JSON is YAML) into setting values by config key. Keys may be
 * camelCase (`envForwardAllowlist`) or snake_case as Pulumi's agent spells them
 * (`env_forward_allowlist`). Throws {@link UserError} naming the file and the first problem.
 */
export function readConfigFile(file: string): Record<string, FileValue | undefined> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UserError(`--config ${file}: cannot read the file (${code})`);
  }
  let document: unknown;
  try {
    document = parse(text) ?? {};
  } catch (error) {
    const line = error instanceof Error ? (error.message.split("\n")[0] ?? "") : "";
    throw new UserError(`--config ${file}: not valid YAML or JSON (${line})`);
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    throw new UserError(`--config ${file}: must be a mapping of settings`);
  }
  const normalized = Object.fromEntries(
    Object.entries(document).map(([key, value]) => [camel(key), value]),
  );
  const parsed = ConfigFile.safeParse(normalized);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const keys = issue?.code === "unrecognized_keys" ? issue.keys.join(", ") : "";
    const where = keys || issue?.path.join(".") || "(top level)";
    const message = keys
      ? `unknown setting (known: ${[...FILE_KEYS, "vcsTokens"].join(", ")})`
      : issue?.message;
    throw new UserError(`--config ${file}: ${where}: ${message ?? "is invalid"}`);
  }
  return parsed.data as Record<string, FileValue | undefined>;
}
