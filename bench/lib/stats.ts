/** Small statistics for the bench: percentiles of samples and medians over rounds with spread. */

/** The p-th percentile (0–100) by nearest rank; NaN for no samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) {
    return Number.NaN;
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}

/** A figure as the median over rounds, with the lowest and highest round. */
export type Figure = { median: number; min: number; max: number; rounds: number };

export function figure(perRound: number[]): Figure {
  return {
    median: round(median(perRound)),
    min: round(Math.min(...perRound)),
    max: round(Math.max(...perRound)),
    rounds: perRound.length,
  };
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Runs `task` over `items` with at most `limit` in flight; results keep the input order. */
export async function pool<T, R>(
  items: T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T, index);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Milliseconds since an arbitrary origin, sub-millisecond. */
export function now(): number {
  return performance.now();
}
