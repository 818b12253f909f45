/**
 * Prefixed ids: the prefix names the kind, so an id pasted in the wrong place fails validation
 * instead of finding nothing. 16 random bytes, base32 (lowercase, no padding).
 */
const PREFIXES = {
  org: "org",
  orgToken: "tok",
  pool: "pool",
  agentToken: "atok",
  agent: "agt",
  workspace: "ws",
  variable: "var",
  configurationVersion: "cv",
  run: "run",
  runToken: "rtok",
  stateVersion: "sv",
  vcsHook: "hook",
  delivery: "dlv",
  event: "evt",
  lease: "lease",
  session: "sess",
  oidcTrust: "otr",
  user: "usr",
  team: "team",
  userToken: "utok",
  teamToken: "ttok",
  ssoRequest: "sso",
  cliLogin: "cli",
  schedule: "sch",
  assessment: "asmt",
  notification: "nc",
  notificationDelivery: "ndl",
  runTrigger: "rt",
  project: "prj",
  variableSet: "varset",
  terraformLogin: "tflc",
  workspaceTag: "tag",
  feedbackItem: "fbk",
} as const;

export type IdKind = keyof typeof PREFIXES;

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/** Encodes bytes as lowercase RFC 4648 base32 without padding. */
export function base32(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) {
    out += ALPHABET[(buffer << (5 - bits)) & 31];
  }
  return out;
}

/**
 * A new random id of the given kind.
 * @example newId("run") // "run_4k3…"
 */
export function newId(kind: IdKind): string {
  return `${PREFIXES[kind]}_${base32(crypto.getRandomValues(new Uint8Array(16)))}`;
}

/** The regular expression an id of this kind matches (for zod params). */
export function idPattern(kind: IdKind): RegExp {
  return new RegExp(`^${PREFIXES[kind]}_[a-z2-7]{26}$`);
}
