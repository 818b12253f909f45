/**
 * Pure rules of a job's log: appends at byte offsets, exactly-once through retries, and a cap with
 * a truncation marker. Offsets are the agent's (every byte it ever sent); stored positions are
 * the reader's (what was kept, plus the marker).
 */

export type LogState = {
  /** Bytes the agent has sent, counting dropped ones: the next offset it must use. */
  received: number;
  /** Bytes kept for readers, including the truncation marker. */
  stored: number;
  isTruncated: boolean;
};

export type AppendDecision =
  /** Store `keep` bytes of the chunk (maybe fewer than sent), then `marker` if set. */
  | { kind: "append"; keep: number; marker: string | null }
  /** A retry of bytes already accounted for: acknowledge, store nothing. */
  | { kind: "duplicate" }
  /** A gap or an overlap that is not an exact retry: the agent must resume at `received`. */
  | { kind: "range_mismatch"; received: number };

export function truncationMarker(capBytes: number): string {
  return `\n[outpost: log truncated after ${capBytes} bytes; further output was dropped]\n`;
}

/**
 * Decides what to do with `length` bytes sent at `offset`. `isExactRetry` says whether the bytes
 * equal a chunk stored earlier at that same offset (the caller looks it up).
 */
export function decideAppend(
  state: LogState,
  offset: number,
  length: number,
  capBytes: number,
  isExactRetry: boolean,
): AppendDecision {
  if (offset === state.received) {
    if (state.isTruncated) {
      return { kind: "append", keep: 0, marker: null };
    }
    const room = Math.max(0, capBytes - state.received);
    if (length <= room) {
      return { kind: "append", keep: length, marker: null };
    }
    return { kind: "append", keep: room, marker: truncationMarker(capBytes) };
  }
  if (offset < state.received && offset + length <= state.received) {
    // Bytes past the cap were never stored, so a retry that reaches past it is as good as exact.
    if (isExactRetry || offset + length > capBytes) {
      return { kind: "duplicate" };
    }
  }
  return { kind: "range_mismatch", received: state.received };
}
