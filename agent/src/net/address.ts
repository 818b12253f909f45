/**
 * Plain http is for loopback only: an agent token, a job's secrets and the agent's own updates
 * must not cross a network unencrypted, and a plain-http coordinator on another host is one a
 * man in the middle can impersonate. `--insecure-http` (agent) and `OUTPOST_INSECURE_HTTP` /
 * `outpost login --insecure-http` (CLI) accept one on purpose, for a network the operator trusts.
 */
import { isLoopbackHost } from "@outpost/protocol";

/**
 * Why `address` may not be used, or null when it may: https, plain http to a loopback host, or
 * plain http when `isInsecureAllowed`. `allowWith` names how to allow it (the flag).
 */
export function plainHttpRefusal(
  address: string,
  isInsecureAllowed: boolean,
  allowWith = "--insecure-http",
): string | null {
  const url = new URL(address);
  if (url.protocol !== "http:" || isInsecureAllowed || isLoopbackHost(url.hostname)) {
    return null;
  }
  return `${address} is plain http to a host that is not loopback: tokens, secrets and agent updates would cross the network unencrypted, and anyone on the way could answer in the coordinator's place; use https, or allow it with ${allowWith} on a network you trust`;
}
