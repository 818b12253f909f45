/**
 * The engine version field's suggestions: one `<datalist>` per engine with `latest`, a
 * constraint per minor release, and the versions the pools' live agents reported, each saying
 * where it came from (the page script switches the field's list when the engine changes).
 */
import { ENGINES } from "@outpost/protocol";
import type { EngineVersionOffer } from "../../pools/engine-versions.ts";

const SOURCE_WORDS = {
  mirror: "listed by the mirror",
  cache: "cached on an agent",
  path: "on an agent's PATH",
} as const;

/** How a constraint on the newest patch of `major.minor` reads in the engine's syntax. */
function patchConstraint(engine: string, version: string): string {
  const [major, minor] = version.split(".");
  return engine === "pulumi" ? `~${major}.${minor}.0` : `~> ${major}.${minor}.0`;
}

/**
 * One suggestion list per engine for the version field: `latest`, a constraint per minor
 * release offered, and every version the pools' agents reported, saying where each came from.
 * Only suggestions: the field takes any version or constraint the engine understands.
 */
export function EngineVersionLists(props: { prefix: string; offers: EngineVersionOffer[] }) {
  return (
    <>
      {ENGINES.map((engine) => {
        const offers = props.offers.filter((o) => o.engine === engine);
        const minors = [...new Set(offers.map((o) => patchConstraint(engine, o.version)))];
        return (
          <datalist id={`${props.prefix}-versions-${engine}`}>
            <option value="latest">the newest release, resolved by the agent at each run</option>
            {minors.map((c) => (
              <option value={c}>
                newest patch of {c.replace(/^~>? ?/, "").replace(/\.0$/, "")}
              </option>
            ))}
            {offers.map((o) => (
              <option value={o.version}>
                {o.sources.map((s) => SOURCE_WORDS[s]).join(", ")} (pool {o.pools.join(", ")})
              </option>
            ))}
          </datalist>
        );
      })}
    </>
  );
}
