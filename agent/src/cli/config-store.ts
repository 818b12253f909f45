import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { toBaseAddress } from "../net/base-address.ts";
import { UsageError } from "./errors.ts";

/**
 * What `outpost login` saves: where the coordinator is, the token to use (an org token, a
 * team token, or the personal token `outpost login --sso` receives), and whether a plain-http
 * address that is not loopback was allowed (`--insecure-http`).
 */
export const Credentials = z.strictObject({
  address: z.string().transform(toBaseAddress),
  token: z
    .string()
    .regex(
      /^op_(org|team|user)_[A-Za-z0-9_-]+$/,
      "must be an org, team or personal token (op_org_…, op_team_…, op_user_…)",
    ),
  insecureHttp: z.boolean().optional(),
});
export type Credentials = z.infer<typeof Credentials>;

/** `$XDG_CONFIG_HOME/outpost/config.json`, or `~/.config/outpost/config.json`. */
export function configFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), ".config");
  return path.join(base, "outpost", "config.json");
}

/**
 * Saves the credentials readable by the user only: the directory is 0700, the file is written
 * 0600 under a temp name and renamed, so no other user ever sees a partial or loose file.
 */
export async function saveCredentials(env: NodeJS.ProcessEnv, value: Credentials): Promise<string> {
  const file = configFile(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
  return file;
}

export async function removeCredentials(env: NodeJS.ProcessEnv): Promise<boolean> {
  const file = configFile(env);
  try {
    await rm(file);
    return true;
  } catch {
    return false;
  }
}

/** `OUTPOST_INSECURE_HTTP`: true, 1, yes or on. */
export function insecureHttpFromEnv(env: NodeJS.ProcessEnv): boolean {
  return ["1", "true", "yes", "on"].includes((env.OUTPOST_INSECURE_HTTP ?? "").toLowerCase());
}

/**
 * The credentials to use: `OUTPOST_ADDRESS` and `OUTPOST_TOKEN` from the environment (for CI)
 * win over the saved file; plain http to a host that is not loopback needs the saved login's
 * `--insecure-http` or `OUTPOST_INSECURE_HTTP`. Throws UsageError when there are none or they
 * are malformed.
 */
export async function loadCredentials(env: NodeJS.ProcessEnv): Promise<Credentials> {
  const file = configFile(env);
  let saved: Record<string, unknown> = {};
  try {
    saved = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new UsageError(`cannot read ${file}; run \`outpost login\` again`);
    }
  }
  const address = env.OUTPOST_ADDRESS || saved.address;
  const token = env.OUTPOST_TOKEN || saved.token;
  if (address === undefined || token === undefined) {
    throw new UsageError(
      "not logged in: run `outpost login --address URL`, or set OUTPOST_ADDRESS and OUTPOST_TOKEN",
    );
  }
  const insecureHttp = insecureHttpFromEnv(env) || saved.insecureHttp === true;
  const parsed = Credentials.safeParse({
    address,
    token,
    ...(insecureHttp ? { insecureHttp } : {}),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = issue?.path[0] === "token" ? "the token" : "the address";
    throw new UsageError(
      `${name} ${issue?.message ?? "is invalid"} (from ${file} or the environment)`,
    );
  }
  return parsed.data;
}
