/**
 * Pure rules of a job's log: appends at byte offsets, exactly-once through retries, and a cap with
 * a truncation marker. Offsets are the agent's (every byte it ever sent); stored positions are
 * the reader's (what was kept, plus the marker). Also the byte helpers the RunLog needs.
 */

export type LogState = {
  /** Bytes the agent has sent, counting dropped ones: the next offset it must use. */
  received: number;
  /** Bytes kept for readers, including the truncation marker. */
  stored: number;
  isTruncated: boolean;
};

/** A job's log as its object keeps it (one `logs` row). */
export type LogMeta = LogState & {
  jobId: string;
  leaseId: string | null;
  isFinal: boolean;
  /** The R2 object holding the whole log once the job ended. */
  objectKey: string | null;
};

/** Reads a `logs` row. */
export function toLogMeta(row: Record<string, SqlStorageValue>): LogMeta {
  return {
    jobId: String(row.job_id),
    leaseId: row.lease_id === null ? null : String(row.lease_id),
    received: Number(row.received),
    stored: Number(row.stored),
    isTruncated: row.is_truncated === 1,
    isFinal: row.is_final === 1,
    objectKey: row.object_key === null ? null : String(row.object_key),
  };
}

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

/** Whether two byte arrays hold the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) {
    return false;
  }
  for (let i = 0; i < a.byteLength; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}

/** `parts` one after another in one array of `size` bytes (their total). */
export function concatBytes(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
