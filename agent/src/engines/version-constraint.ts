/**
 * Resolves an engine version constraint (`latest`, `1.9.5`, `~> 1.9`, `>= 1.6, < 2.0`) to one
 * exact version among those a release index offers, with Terraform's rules: `~> 1.9` is
 * `>= 1.9, < 2.0` and `~> 1.9.5` is `>= 1.9.5, < 1.10.0`; pre-releases are chosen only when
 * named exactly. Parsing is the protocol's (`@outpost/protocol`), comparison is `semver`'s.
 * Self-contained and engine-agnostic: any engine with semantic versions can use it.
 */
import {
  parseVersionConstraint,
  type VersionComparator,
  type VersionConstraint,
} from "@outpost/protocol";
import semver from "semver";

export type Resolution = { ok: true; version: string } | { ok: false; reason: string };

/** True when `constraint` names one exact version (nothing to resolve). */
export function isExactVersion(constraint: string): boolean {
  const parsed = parseVersionConstraint(constraint);
  return parsed.ok && parsed.value.kind === "exact";
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

/** Whether `version` satisfies the parsed constraint. */
export function satisfies(version: string, constraint: VersionConstraint): boolean {
  if (!semver.valid(version)) {
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

/**
 * The newest of `available` that satisfies `constraint`. Fails with a sentence when the
 * constraint does not parse or nothing matches (naming the newest versions offered).
 */
export function resolveVersion(constraint: string, available: readonly string[]): Resolution {
  const parsed = parseVersionConstraint(constraint);
  if (!parsed.ok) {
    return { ok: false, reason: `invalid version constraint "${constraint}": ${parsed.reason}` };
  }
  const valid = available.filter((v) => semver.valid(v) !== null);
  const matching = valid.filter((v) => satisfies(v, parsed.value)).sort(semver.rcompare);
  const newest = matching[0];
  if (newest !== undefined) {
    return { ok: true, version: newest };
  }
  const offered = [...valid].sort(semver.rcompare).slice(0, 5);
  return {
    ok: false,
    reason:
      offered.length === 0
        ? `no version satisfies "${constraint}": the release index lists no versions`
        : `no version satisfies "${constraint}"; the newest offered are ${offered.join(", ")}`,
  };
}
