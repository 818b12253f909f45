/** Milliseconds since the epoch, as the code that reads it is allowed to see them. */
export type Clock = () => number;

/** The real time, the only clock a deployed Worker is built with (`src/index.ts`). */
export const systemClock: Clock = () => Date.now();
