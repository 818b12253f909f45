/** What a system or TLS error code means, in words an operator acts on. */
const MEANINGS: Record<string, string> = {
  ECONNREFUSED: "connection refused: nothing listens at that address and port",
  ECONNRESET: "connection reset by the other side",
  ENOTFOUND: "DNS lookup failed: no such host",
  EAI_AGAIN: "DNS lookup failed temporarily",
  ETIMEDOUT: "connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_HEADERS_TIMEOUT: "no answer in time",
  UND_ERR_BODY_TIMEOUT: "the answer stalled",
  UND_ERR_SOCKET: "the connection broke",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  EPIPE: "the connection broke",
  EPROTO: "TLS handshake failed (is it an http address with https, or the reverse?)",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS certificate not trusted: a self-signed CA; add it with --ca-cert",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS certificate not trusted: self-signed; add it with --ca-cert",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    "TLS certificate not trusted: unknown issuer; add its CA with --ca-cert",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    "TLS certificate not trusted: unknown issuer; add its CA with --ca-cert",
  CERT_HAS_EXPIRED: "TLS certificate expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS certificate is for another host name",
};

/**
 * The most specific cause of a failed request, as one line: the meaning of its error code (when
 * known), the code and the system's own message, e.g. `connection refused: nothing listens at
 * that address and port (ECONNREFUSED connect ECONNREFUSED 127.0.0.1:9)`. undici nests the
 * system error as `cause` (sometimes twice, and as an AggregateError for multiple addresses).
 */
export function describeNetworkError(error: unknown): string {
  const innermost = deepestCause(error);
  const code = errorCode(innermost);
  const message = innermost instanceof Error ? innermost.message : String(innermost);
  if (code === null) {
    return message;
  }
  const meaning = MEANINGS[code];
  const detail = message.includes(code) ? message : `${code} ${message}`;
  return meaning === undefined ? detail : `${meaning} (${detail})`;
}

/** Failures before a connection to the server existed: it never saw the request. */
const NEVER_CONNECTED_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * True when a request failed before it reached the server (refused, no such host, no route):
 * unlike a connection cut later, the server never held it.
 */
export function isNeverConnected(error: unknown): boolean {
  const code = errorCode(deepestCause(error));
  return code !== null && NEVER_CONNECTED_CODES.has(code);
}

/** Certificate problems: retrying the same request cannot fix them. */
const TLS_TRUST_CODES = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** True when a request failed because the server's certificate is not trusted or not valid. */
export function isTlsTrustError(error: unknown): boolean {
  const code = errorCode(deepestCause(error));
  return code !== null && TLS_TRUST_CODES.has(code);
}

function deepestCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5; depth++) {
    if (current instanceof AggregateError && current.errors.length > 0) {
      current = current.errors[0];
      continue;
    }
    if (current instanceof Error && current.cause !== undefined) {
      current = current.cause;
      continue;
    }
    break;
  }
  return current;
}

function errorCode(error: unknown): string | null {
  if (typeof error === "object" && error !== null && "code" in error) {
    return typeof error.code === "string" ? error.code : null;
  }
  return null;
}
