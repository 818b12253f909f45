/** Set by the build (agent/scripts/build.ts): the release keys it signed with and named next. */
declare const OUTPOST_RELEASE_KEYS: readonly string[] | undefined;

/**
 * The release public keys compiled into this build: the key that signed it and any next keys
 * its manifest names (key rotation). Empty when the agent runs from its sources.
 */
export const BUILT_RELEASE_KEYS: readonly string[] =
  typeof OUTPOST_RELEASE_KEYS === "undefined" ? [] : OUTPOST_RELEASE_KEYS;
