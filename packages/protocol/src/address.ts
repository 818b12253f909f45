/**
 * Which coordinator addresses may be spoken to over plain http: only loopback ones, where nothing
 * crosses a network. The coordinator uses the same rule to decide when a request's own origin may
 * stand in for `PUBLIC_URL` (local development).
 */

/** Host names (as `URL.hostname` spells them) that can only be this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "::1" ||
    /^127(?:\.\d{1,3}){3}$/.test(host) ||
    /^::ffff:127(?:\.\d{1,3}){3}$/.test(host) ||
    // WHATWG URLs write an IPv4-mapped address in hex: [::ffff:7f00:1] is 127.0.0.1.
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(host)
  );
}
