/**
 * Which exact version a workspace's `engineVersion` means among the versions offered, for every
 * engine. One rule for what an exact version is: the protocol's (`EXACT_VERSION_PATTERN`, no
 * build metadata). Constraints read as the engine writes them: Terraform's syntax for Terraform
 * and OpenTofu (`~> 1.9` is `>= 1.9, < 2.0`, `~> 1.9.5` is `>= 1.9.5, < 1.10.0`, comparators
 * joined by commas), npm's semver ranges for Pulumi (`^3.150`, `>=3.100 <4`); `latest` is the
 * newest release. A pre-release is chosen only when named: exactly in Terraform's syntax, as
 * npm allows it in a range. Pure; comparison is `semver`'s.
 */
import {
  EXACT_VERSION_PATTERN,
  parseVersionConstraint,
  type VersionComparator,
  type VersionConstraint,
} from "@outpost/protocol";
import semver from "semver";

/** How an engine writes version constraints. */
export type ConstraintSyntax = "terraform" | "semver";

export type Resolution = { ok: true; version: string } | { ok: false; reason: string };

/** True when `text` is one exact version (nothing to resolve); the protocol's rule. */
export function isExactVersion(text: string): boolean {
  return EXACT_VERSION_PATTERN.test(text.trim());
}

function upperBoundOfPessimistic(c: VersionComparator): string | null {
  const v = semver.parse(c.version);
  if (!v) {
    return null;
  }
  if (c.segments === 3) {
    return `${v.major}.${v.minor + 1}.0`;
  }
  if (c.segments === 2) {
    return `${v.major + 1}.0.0`;
  }
  // `~> 1` only fixes the lower bound, as Terraform's own constraint library reads it.
  return null;
}

function satisfiesComparator(version: string, c: VersionComparator): boolean {
  switch (c.operator) {
    case "=":
      return semver.eq(version, c.version);
    case "!=":
      return !semver.eq(version, c.version);
    case ">":
      return semver.gt(version, c.version);
    case ">=":
      return semver.gte(version, c.version);
    case "<":
      return semver.lt(version, c.version);
    case "<=":
      return semver.lte(version, c.version);
    case "~>": {
      const upper = upperBoundOfPessimistic(c);
      return semver.gte(version, c.version) && (upper === null || semver.lt(version, upper));
    }
  }
}

/** Whether `version` satisfies a constraint in Terraform's syntax. */
export function satisfies(version: string, constraint: VersionConstraint): boolean {
  if (!isExactVersion(version)) {
    return false;
  }
  switch (constraint.kind) {
    case "latest":
      return semver.prerelease(version) === null;
    case "exact":
      return semver.eq(version, constraint.version);
    case "range": {
      // A pre-release is chosen only when a comparator names that very pre-release.
      const namedPre = constraint.comparators.some(
        (c) => c.operator === "=" && semver.prerelease(c.version) !== null,
      );
      if (semver.prerelease(version) !== null && !namedPre) {
        return false;
      }
      return constraint.comparators.every((c) => satisfiesComparator(version, c));
    }
  }
}

type Matcher = { ok: true; test: (version: string) => boolean } | { ok: false; reason: string };

/** The test a version must pass for `constraint`, or why the constraint does not parse. */
function matcher(constraint: string, syntax: ConstraintSyntax): Matcher {
  if (syntax === "terraform") {
    const parsed = parseVersionConstraint(constraint);
    return parsed.ok
      ? { ok: true, test: (v) => satisfies(v, parsed.value) }
      : { ok: false, reason: parsed.reason };
  }
  if (constraint === "latest") {
    return { ok: true, test: (v) => semver.prerelease(v) === null };
  }
  if (isExactVersion(constraint)) {
    return { ok: true, test: (v) => semver.eq(v, constraint) };
  }
  const range = semver.validRange(constraint);
  return range === null
    ? { ok: false, reason: `"${constraint}" is not a semver range such as ^3.150` }
    : { ok: true, test: (v) => semver.satisfies(v, range) };
}

/**
 * The newest of `available` that satisfies `constraint`, in the engine's `syntax` (Terraform's
 * by default). Fails with a sentence when the constraint does not parse or nothing matches,
 * naming the newest versions offered. Anything offered that is not an exact version is ignored.
 */
export function resolveVersion(
  constraint: string,
  available: readonly string[],
  syntax: ConstraintSyntax = "terraform",
): Resolution {
  const match = matcher(constraint.trim(), syntax);
  if (!match.ok) {
    return { ok: false, reason: `invalid version constraint "${constraint}": ${match.reason}` };
  }
  const valid = [...new Set(available.filter(isExactVersion))];
  const newest = valid.filter(match.test).sort(semver.rcompare)[0];
  if (newest !== undefined) {
    return { ok: true, version: newest };
  }
  const offered = valid.sort(semver.rcompare).slice(0, 5);
  return {
    ok: false,
    reason:
      offered.length === 0
        ? `no version satisfies "${constraint}": the release index lists no versions`
        : `no version satisfies "${constraint}"; the newest offered are ${offered.join(", ")}`,
  };
}
