/**
 * Run trigger rules, pure: how many sources a workspace may have, and whether a new trigger
 * would close a cycle (an apply that queues, through the chain, a run of its own workspace).
 */

/** Source workspaces one target may have (Terraform Cloud's limit). */
export const MAX_SOURCES = 20;

/** A trigger as an edge: an applied run of `source` queues a plan on `target`. */
export type TriggerEdge = { source: string; target: string };

/**
 * The cycle a new edge `source → target` would close, as the workspaces along it (starting and
 * ending with `source`), or null when it closes none. A trigger from a workspace to itself is
 * the shortest cycle. Breadth first, so the cycle named is a shortest one.
 */
export function cycleThrough(edges: readonly TriggerEdge[], added: TriggerEdge): string[] | null {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    next.set(edge.source, [...(next.get(edge.source) ?? []), edge.target]);
  }
  const cameFrom = new Map<string, string | null>([[added.target, null]]);
  const queue = [added.target];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    if (node === added.source) {
      const path: string[] = [];
      for (let at: string | null | undefined = node; at != null; at = cameFrom.get(at)) {
        path.unshift(at);
      }
      return [added.source, ...path];
    }
    for (const target of next.get(node) ?? []) {
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return null;
}

/** The message of a run a trigger queued: it names the source run and workspace. */
export function triggeredRunMessage(sourceRunId: string, sourceWorkspaceName: string): string {
  return `Queued by a run trigger: run ${sourceRunId} of workspace ${sourceWorkspaceName} was applied`;
}
