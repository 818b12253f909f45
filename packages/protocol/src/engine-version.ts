/**
 * Engine version constraints as Terraform writes them (`required_version`): `latest`, an exact
 * version (`1.9.5`), or comparators joined by commas (`>= 1.6, < 2.0`, `~> 1.9`, `!= 1.7.0`).
 * The coordinator checks the syntax when a workspace is saved; the agent resolves the constraint
 * against the versions it can install. Pure and dependency-free.
 */
export type VersionOperator = "=" | "!=" | ">" | ">=" | "<" | "<=" | "~>";

/** One comparator; `segments` is how many of major.minor.patch were written (for `~>`). */
export type VersionComparator = {
  operator: VersionOperator;
  version: string;
  segments: 1 | 2 | 3;
};

export type VersionConstraint =
  | { kind: "latest" }
  | { kind: "exact"; version: string }
  | { kind: "range"; comparators: VersionComparator[] };

/**
 * A full release version (`1.9.5`, `1.10.0-beta1`): the one rule for an exact engine version,
 * for every engine (no `v` prefix, no build metadata).
 */
export const EXACT_VERSION_PATTERN =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$/;
const COMPARATOR_PATTERN =
  /^(=|!=|>=|<=|>|<|~>)?\s*(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?(-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$/;

export type ParsedConstraint =
  | { ok: true; value: VersionConstraint }
  | { ok: false; reason: string };

/** Parses a constraint; the failure reason is a sentence naming the part that is wrong. */
export function parseVersionConstraint(text: string): ParsedConstraint {
  const trimmed = text.trim();
  if (trimmed === "latest") {
    return { ok: true, value: { kind: "latest" } };
  }
  if (EXACT_VERSION_PATTERN.test(trimmed)) {
    return { ok: true, value: { kind: "exact", version: trimmed } };
  }
  const comparators: VersionComparator[] = [];
  for (const part of trimmed.split(",")) {
    const match = COMPARATOR_PATTERN.exec(part.trim());
    if (!match) {
      return {
        ok: false,
        reason: `"${part.trim()}" is not a version or a comparison such as ">= 1.6" or "~> 1.9"`,
      };
    }
    const [, op, major, minor, patch, pre] = match;
    const segments = patch !== undefined ? 3 : minor !== undefined ? 2 : 1;
    if ((op ?? "=") === "~>" && pre !== undefined) {
      return { ok: false, reason: `"~>" takes a release version, not "${part.trim()}"` };
    }
    comparators.push({
      operator: (op ?? "=") as VersionOperator,
      version: `${major}.${minor ?? 0}.${patch ?? 0}${pre ?? ""}`,
      segments,
    });
  }
  return { ok: true, value: { kind: "range", comparators } };
}
