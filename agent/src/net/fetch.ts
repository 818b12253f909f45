import { EnvHttpProxyAgent, fetch as undiciFetch } from "undici";
import { trustedCas } from "./ca.ts";

/** The proxy variables the agent honours, as the usual tools spell them. */
export const PROXY_VARIABLES = [
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
] as const;

/**
 * http:// URLs go to the proxy in absolute form, as curl and Go send them: many proxies allow
 * CONNECT only to port 443. https:// URLs are tunnelled with CONNECT.
 */
const PLAIN_HTTP_IN_ABSOLUTE_FORM = { proxyTunnel: false } as const;

let dispatcher = new EnvHttpProxyAgent(PLAIN_HTTP_IN_ABSOLUTE_FORM);

/**
 * Sets how every request of this process leaves the host: through the proxy that `HTTPS_PROXY`,
 * `HTTP_PROXY` and `NO_PROXY` (either case, lower case first) name, trusting Node's default CAs
 * plus `extraCas` both on direct connections and inside proxy tunnels. Called once at start;
 * reads the proxy variables from the environment at that moment.
 */
export function configureNetwork(options: { extraCas: readonly string[] }): void {
  const previous = dispatcher;
  if (options.extraCas.length === 0) {
    dispatcher = new EnvHttpProxyAgent(PLAIN_HTTP_IN_ABSOLUTE_FORM);
  } else {
    const ca = trustedCas(options.extraCas);
    dispatcher = new EnvHttpProxyAgent({
      ...PLAIN_HTTP_IN_ABSOLUTE_FORM,
      connect: { ca },
      requestTls: { ca },
      proxyTls: { ca },
    });
  }
  void previous.close().catch(() => {});
}

/** `fetch` through the configured proxy and CAs; every outbound request of the agent uses it. */
export function httpFetch(
  url: string | URL,
  init: Parameters<typeof undiciFetch>[1] = {},
): ReturnType<typeof undiciFetch> {
  return undiciFetch(url, { ...init, dispatcher });
}

export type HttpResponse = Awaited<ReturnType<typeof undiciFetch>>;
