/** Small helpers for sentences people read. */

/** `1 agent`, `3 agents`, `1 job`, `0 jobs`; `plural` for irregular nouns. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
