/**
 * `outpost login --sso`, device-style: the coordinator gives a code and an address; the person
 * opens it in a browser where they are signed in (through the organization's provider) and
 * approves; the next poll receives a personal token, which is saved like any login. Nothing
 * secret is typed into the terminal or passed on the command line.
 */
import { hostname } from "node:os";
import { sleep } from "../../sleep.ts";
import { must, UserApi } from "../api.ts";
import { Credentials, saveCredentials } from "../config-store.ts";
import type { CliContext } from "../context.ts";
import { CLI_EXIT, type CliExitCode, UsageError } from "../errors.ts";

/**
 * Runs the device-style login against `address` and saves the personal token it receives
 * (with `insecureHttp`: a plain-http address that is not loopback is allowed, and remembered).
 */
export async function ssoLogin(
  ctx: CliContext,
  address: string,
  insecureHttp = false,
): Promise<CliExitCode> {
  const base = Credentials.shape.address.safeParse(address);
  if (!base.success) {
    throw new UsageError(`--address ${base.error.issues[0]?.message ?? "is invalid"}`);
  }
  const api = new UserApi({ address: base.data, insecureHttp });
  const started = await must(
    api.client.POST("/auth/cli/start", {
      body: { clientName: hostname().slice(0, 100) || "a terminal" },
    }),
  );
  ctx.err.write(
    `Open ${started.verificationUrl} in a browser where you are signed in to Outpost, check that it shows ${started.userCode}, and approve.\nWaiting for the approval (until ${started.expiresAt})…\n`,
  );
  const stop = new AbortController();
  const release = ctx.onInterrupt(() => stop.abort());
  try {
    const deadline = Date.parse(started.expiresAt);
    while (Date.now() < deadline && !stop.signal.aborted) {
      await sleep(started.intervalSeconds * 1000, stop.signal).catch(() => undefined);
      if (stop.signal.aborted) {
        break;
      }
      const polled = await must(
        api.client.POST("/auth/cli/token", { body: { deviceCode: started.deviceCode } }),
      );
      if (polled.status === "approved" && polled.token) {
        return await save(ctx, base.data, polled.token, insecureHttp);
      }
    }
  } finally {
    release();
  }
  if (stop.signal.aborted) {
    ctx.err.write("Login abandoned.\n");
    return CLI_EXIT.interrupted;
  }
  throw new UsageError("the login was not approved in time; run `outpost login --sso` again");
}

async function save(
  ctx: CliContext,
  address: string,
  token: string,
  insecureHttp: boolean,
): Promise<CliExitCode> {
  const credentials = Credentials.parse({
    address,
    token,
    ...(insecureHttp ? { insecureHttp } : {}),
  });
  const me = await must(new UserApi(credentials).client.GET("/api/v1/user"));
  const file = await saveCredentials(ctx.env, credentials);
  ctx.err.write(`Logged in to ${address} as ${me.email}; saved in ${file}\n`);
  return CLI_EXIT.ok;
}
