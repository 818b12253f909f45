/**
 * The precedence of variables, one row per case (Terraform Cloud's "Variables" page, section
 * Precedence): priority global > priority project > priority workspace-scoped > the workspace's
 * own > workspace-scoped > project-scoped > global, and between sets of the same rank the name
 * first in Unicode code point order.
 */
import { describe, expect, it } from "vitest";
import {
  type Candidate,
  compareCodePoints,
  mergeVariables,
  type SetScope,
  type VariableSource,
} from "../../src/variables/precedence.ts";

type V = { key: string; category: "env" | "terraform"; value: string };

const own: VariableSource = { type: "workspace" };
function set(name: string, scope: SetScope, priority = false): VariableSource {
  return { type: "variable_set", id: `varset_${name}`, name, scope, priority };
}
const label = (s: VariableSource) =>
  s.type === "workspace" ? "workspace" : `${s.priority ? "priority " : ""}${s.scope} ${s.name}`;

const ROWS: { name: string; sources: VariableSource[]; wins: VariableSource }[] = [
  { name: "the workspace alone", sources: [own], wins: own },
  { name: "workspace over global", sources: [set("g", "global"), own], wins: own },
  { name: "workspace over project", sources: [set("p", "project"), own], wins: own },
  { name: "workspace over workspace-scoped", sources: [set("w", "workspace"), own], wins: own },
  {
    name: "workspace-scoped over project",
    sources: [set("p", "project"), set("w", "workspace")],
    wins: set("w", "workspace"),
  },
  {
    name: "project over global",
    sources: [set("g", "global"), set("p", "project")],
    wins: set("p", "project"),
  },
  {
    name: "workspace-scoped over global",
    sources: [set("a", "global"), set("z", "workspace")],
    wins: set("z", "workspace"),
  },
  {
    name: "priority global over the workspace",
    sources: [own, set("g", "global", true)],
    wins: set("g", "global", true),
  },
  {
    name: "priority global over priority project",
    sources: [set("p", "project", true), set("g", "global", true)],
    wins: set("g", "global", true),
  },
  {
    name: "priority project over priority workspace-scoped",
    sources: [set("w", "workspace", true), set("p", "project", true)],
    wins: set("p", "project", true),
  },
  {
    name: "priority workspace-scoped over the workspace",
    sources: [own, set("w", "workspace", true)],
    wins: set("w", "workspace", true),
  },
  {
    name: "priority project over everything below, whatever the order",
    sources: [set("g", "global"), own, set("p", "project", true), set("w", "workspace")],
    wins: set("p", "project", true),
  },
  {
    name: "tie between project sets: the first name wins",
    sources: [set("B_Variable_Set", "project"), set("A_Variable_Set", "project")],
    wins: set("A_Variable_Set", "project"),
  },
  {
    name: "tie between workspace-scoped sets: code points, so capitals first",
    sources: [set("apps", "workspace"), set("Zeta", "workspace")],
    wins: set("Zeta", "workspace"),
  },
  {
    name: "tie between priority sets of the same scope: the first name wins",
    sources: [set("creds-2", "project", true), set("creds-1", "project", true)],
    wins: set("creds-1", "project", true),
  },
  {
    name: "tie between global sets (refused on write, still decided): the first name wins",
    sources: [set("tags", "global"), set("base", "global")],
    wins: set("base", "global"),
  },
];

describe("variable precedence", () => {
  for (const row of ROWS) {
    it(`${row.name}: ${label(row.wins)}`, () => {
      const candidates: Candidate<V>[] = row.sources.map((source) => ({
        variable: { key: "region", category: "env", value: label(source) },
        source,
      }));
      for (const order of [candidates, [...candidates].reverse()]) {
        const { effective, overridden } = mergeVariables(order);
        expect(effective).toHaveLength(1);
        expect(effective[0]?.source).toEqual(row.wins);
        expect(effective[0]?.variable.value).toBe(label(row.wins));
        expect(overridden).toHaveLength(row.sources.length - 1);
        expect(overridden.every((o) => o.overriddenBy === effective[0]?.source)).toBe(true);
      }
    });
  }

  it("a key in two categories is two variables, both effective", () => {
    const { effective, overridden } = mergeVariables<V>([
      {
        variable: { key: "region", category: "terraform", value: "a" },
        source: set("g", "global"),
      },
      { variable: { key: "region", category: "env", value: "b" }, source: own },
    ]);
    expect(effective.map((c) => `${c.variable.category}:${c.variable.value}`)).toEqual([
      "env:b",
      "terraform:a",
    ]);
    expect(overridden).toEqual([]);
  });

  it("orders names by Unicode code points, not UTF-16 code units", () => {
    // U+FFFF comes before U+1F600, though the latter's first UTF-16 unit (0xD83D) is smaller.
    expect(compareCodePoints("\uFFFF", "\u{1F600}")).toBeLessThan(0);
    expect("\uFFFF" < "\u{1F600}").toBe(false);
    expect(compareCodePoints("A", "a")).toBeLessThan(0);
    expect(compareCodePoints("ab", "abc")).toBeLessThan(0);
    const { effective } = mergeVariables<V>([
      {
        variable: { key: "k", category: "env", value: "emoji" },
        source: set("\u{1F600}", "project"),
      },
      { variable: { key: "k", category: "env", value: "bmp" }, source: set("\uFFFF", "project") },
    ]);
    expect(effective[0]?.variable.value).toBe("bmp");
  });
});
