/**
 * Streaming inspection of an uploaded `.tar.gz`: gunzip (fflate), parse the tar
 * as it passes (modern-tar, strict: checksums, truncation, EOF), and refuse anything that could
 * write outside the extraction directory or create something other than files, directories and
 * in-tree links. Entry bodies are skipped, never buffered.
 */
import { Gunzip } from "fflate";
import { createTarDecoder, type TarHeader } from "modern-tar";

export type TarRejection = {
  reason: "not_gzip" | "not_tar" | "unsafe_entry" | "too_large";
  message: string;
};

export type TarSummary = { entries: number; unpackedBytes: number };

/**
 * `maxRatio`: once more than {@link RATIO_FREE_BYTES} are unpacked, the unpacked bytes may not
 * exceed `maxRatio` times the compressed bytes received so far.
 */
export type TarLimits = { maxUnpackedBytes: number; maxEntries: number; maxRatio: number };

/**
 * Unpacked bytes never judged by the ratio: small archives of mostly padding (a tar of tiny
 * files, a block of zeros) compress far better than 100:1 and are harmless at this size.
 */
export const RATIO_FREE_BYTES = 16 * 1024 * 1024;

/**
 * Compressed bytes inflated at a time: at gzip's ceiling (about 1000:1) a slice unpacks to about
 * 1 MiB, so the limits are checked at least that often.
 */
const INFLATE_SLICE_BYTES = 1024;

/** Told each accepted entry that can be read as a file: its path (segments joined by `/`). */
export type FileObserver = (path: string) => void;

class Rejected extends Error {
  constructor(readonly rejection: TarRejection) {
    super(rejection.message);
  }
}

/** Path segments of an entry name, without `.` and empty segments; null when not relative. */
function segmentsOf(path: string): string[] | null {
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path) || path.includes("\\")) {
    return null;
  }
  return path.split("/").filter((s) => s !== "" && s !== ".");
}

/**
 * Resolves `target` from the directory `base` lexically. Null when it climbs above the root or
 * walks through a known symlink (where lexical resolution would no longer be the truth).
 */
function resolveInside(base: string[], target: string, symlinks: Set<string>): string[] | null {
  const parts = segmentsOf(target);
  if (!parts) {
    return null;
  }
  const out = [...base];
  for (const part of parts) {
    if (symlinks.has(out.join("/")) && out.length > 0) {
      return null;
    }
    if (part === "..") {
      if (out.length === 0) {
        return null;
      }
      out.pop();
    } else {
      out.push(part);
    }
  }
  return out;
}

/** Checks entries one by one and links once every symlink of the archive is known. */
class EntryChecker {
  private readonly symlinks = new Set<string>();
  private readonly links: { path: string[]; kind: "symlink" | "link"; target: string }[] = [];

  /** Why this entry is refused, or null. */
  add(header: TarHeader): string | null {
    const name = header.name;
    const type = header.type ?? "file";
    const segments = segmentsOf(name);
    if (name === "" || name.includes("\0")) {
      return "an entry has an empty or invalid name";
    }
    if (!segments) {
      return name.includes("\\")
        ? `entry ${JSON.stringify(name)} contains a backslash`
        : `entry ${JSON.stringify(name)} is an absolute path`;
    }
    if (segments.includes("..")) {
      return `entry ${JSON.stringify(name)} contains '..'`;
    }
    if (type === "character-device" || type === "block-device" || type === "fifo") {
      return `entry ${JSON.stringify(name)} is a ${type}`;
    }
    for (let i = 1; i < segments.length; i++) {
      const prefix = segments.slice(0, i).join("/");
      if (this.symlinks.has(prefix)) {
        return `entry ${JSON.stringify(name)} goes through the symlink ${JSON.stringify(prefix)}`;
      }
    }
    if (type === "symlink" || type === "link") {
      if (!header.linkname) {
        return `link ${JSON.stringify(name)} has no target`;
      }
      if (type === "symlink") {
        this.symlinks.add(segments.join("/"));
      }
      this.links.push({ path: segments, kind: type, target: header.linkname });
    }
    return null;
  }

  /** Why a link of the archive points outside the tree, or null. */
  finish(): string | null {
    for (const link of this.links) {
      // A symlink resolves from its own directory, a hard link from the archive root.
      const base = link.kind === "symlink" ? link.path.slice(0, -1) : [];
      const resolved =
        link.kind === "link" && link.target.split("/").includes("..")
          ? null
          : resolveInside(base, link.target, this.symlinks);
      if (!resolved) {
        return `${link.kind === "symlink" ? "symlink" : "hard link"} ${JSON.stringify(link.path.join("/"))} points outside the archive (${JSON.stringify(link.target)})`;
      }
    }
    return null;
  }
}

/**
 * Starts an inspection: write the compressed bytes to `writable` and close it; `result` settles
 * with a summary or the reason the archive is refused. After a refusal, writes to `writable`
 * fail, so the producer stops early.
 */
export function inspectTarGz(
  limits: TarLimits,
  onFile: FileObserver = () => {},
): {
  writable: WritableStream<Uint8Array>;
  result: Promise<{ ok: true; value: TarSummary } | { ok: false; rejection: TarRejection }>;
} {
  const gunzip = inflateWithin(limits);
  const decoder = createTarDecoder({ strict: true });
  const reader = gunzip.stream.readable.pipeThrough(decoder).getReader();
  const checker = new EntryChecker();

  const result = (async () => {
    let entries = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        entries += 1;
        const problem = checker.add(value.header);
        await value.body.cancel();
        if (problem) {
          throw new Rejected({ reason: "unsafe_entry", message: problem });
        }
        noticeFile(value.header, onFile);
        if (entries > limits.maxEntries) {
          throw new Rejected({
            reason: "too_large",
            message: `more than ${limits.maxEntries} entries`,
          });
        }
      }
      const problem = checker.finish();
      if (problem) {
        throw new Rejected({ reason: "unsafe_entry", message: problem });
      }
      if (entries === 0) {
        throw new Rejected({ reason: "not_tar", message: "the archive has no entries" });
      }
      return { ok: true as const, value: { entries, unpackedBytes: gunzip.unpackedBytes() } };
    } catch (err) {
      await reader.cancel(err).catch(() => undefined);
      return { ok: false as const, rejection: classify(err) };
    }
  })();
  return { writable: gunzip.stream.writable, result };
}

/**
 * Gunzips as a stream, checking the limits as the bytes come out rather than after: past
 * `maxUnpackedBytes`, or past `maxRatio` times the compressed bytes pushed so far (beyond
 * {@link RATIO_FREE_BYTES}), it fails with `too_large`; on data that is not gzip (or stops
 * short), with `not_gzip`. Compressed bytes are inflated a small slice at a time, so a gzip bomb
 * is stopped after a few MiB of inflating, not at the unpacked limit. (The platform's
 * DecompressionStream takes all its input at once, without backpressure, and cannot be stopped
 * in between.)
 */
function inflateWithin(limits: TarLimits): {
  stream: TransformStream<Uint8Array, Uint8Array>;
  unpackedBytes: () => number;
} {
  let packedBytes = 0;
  let unpackedBytes = 0;
  let out: TransformStreamDefaultController<Uint8Array> | null = null;
  const gunzip = new Gunzip((chunk) => {
    unpackedBytes += chunk.byteLength;
    if (unpackedBytes > limits.maxUnpackedBytes) {
      throw new Rejected({
        reason: "too_large",
        message: `the archive unpacks to more than ${limits.maxUnpackedBytes} bytes`,
      });
    }
    if (unpackedBytes > RATIO_FREE_BYTES && unpackedBytes > packedBytes * limits.maxRatio) {
      throw new Rejected({
        reason: "too_large",
        message: `the archive unpacks to more than ${limits.maxRatio} times its compressed size`,
      });
    }
    if (chunk.byteLength > 0) {
      out?.enqueue(chunk);
    }
  });
  const push = (chunk: Uint8Array, final: boolean) => {
    try {
      gunzip.push(chunk, final);
    } catch (err) {
      throw err instanceof Rejected
        ? err
        : new Rejected({ reason: "not_gzip", message: "the body is not valid gzip data" });
    }
  };
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      out = controller;
    },
    transform(chunk) {
      for (let at = 0; at < chunk.byteLength; at += INFLATE_SLICE_BYTES) {
        const slice = chunk.subarray(at, at + INFLATE_SLICE_BYTES);
        packedBytes += slice.byteLength;
        push(slice, false);
      }
    },
    flush() {
      push(new Uint8Array(0), true);
    },
  });
  return { stream, unpackedBytes: () => unpackedBytes };
}

/** Files and links (the checker kept them inside the tree) read as files once extracted. */
function noticeFile(header: TarHeader, onFile: FileObserver): void {
  const type = header.type ?? "file";
  const segments = segmentsOf(header.name);
  if (
    segments &&
    segments.length > 0 &&
    (type === "file" || type === "symlink" || type === "link")
  ) {
    onFile(segments.join("/"));
  }
}

function classify(err: unknown): TarRejection {
  if (err instanceof Rejected) {
    return err.rejection;
  }
  const detail = err instanceof Error ? err.message : String(err);
  return { reason: "not_tar", message: `the gzip data is not a valid tar archive (${detail})` };
}
