/**
 * A small ustar writer for tests, independent of the parser under test, able to write what no
 * well-behaved tool would: absolute and `..` names, devices, FIFOs, links leaving the tree, pax
 * and GNU long-name overrides, broken checksums, missing end-of-archive blocks.
 */

export type TarTestEntry = {
  name: string;
  type?: "file" | "dir" | "symlink" | "link" | "char" | "block" | "fifo" | "pax" | "gnu-long-name";
  body?: string | Uint8Array;
  linkname?: string;
  /** The ustar prefix field (joined to the name with "/" by readers). */
  prefix?: string;
  /** Records of a pax header entry (type "pax"). */
  pax?: Record<string, string>;
  /** Writes a wrong header checksum. */
  badChecksum?: boolean;
};

const FLAGS: Record<NonNullable<TarTestEntry["type"]>, string> = {
  file: "0",
  link: "1",
  symlink: "2",
  char: "3",
  block: "4",
  dir: "5",
  fifo: "6",
  pax: "x",
  "gnu-long-name": "L",
};

const encoder = new TextEncoder();

function put(block: Uint8Array, offset: number, length: number, text: string): void {
  const bytes = encoder.encode(text);
  block.set(bytes.subarray(0, length), offset);
}

function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, "0")}\0`;
}

function paxBody(records: Record<string, string>): Uint8Array {
  let out = "";
  for (const [key, value] of Object.entries(records)) {
    const rest = ` ${key}=${value}\n`;
    let length = rest.length + 1;
    while (String(length).length + rest.length !== length) {
      length = String(length).length + rest.length;
    }
    out += `${length}${rest}`;
  }
  return encoder.encode(out);
}

function header(entry: TarTestEntry, size: number): Uint8Array {
  const block = new Uint8Array(512);
  const type = entry.type ?? "file";
  put(block, 0, 100, entry.name);
  put(block, 100, 8, octal(type === "dir" ? 0o755 : 0o644, 8));
  put(block, 108, 8, octal(0, 8));
  put(block, 116, 8, octal(0, 8));
  put(block, 124, 12, octal(size, 12));
  put(block, 136, 12, octal(1_700_000_000, 12));
  put(block, 156, 1, FLAGS[type]);
  put(block, 157, 100, entry.linkname ?? "");
  put(block, 257, 6, "ustar\0");
  put(block, 263, 2, "00");
  put(block, 265, 32, "root");
  put(block, 297, 32, "root");
  put(block, 329, 8, octal(0, 8));
  put(block, 337, 8, octal(0, 8));
  put(block, 345, 155, entry.prefix ?? "");
  block.fill(0x20, 148, 156);
  let sum = block.reduce((a, b) => a + b, 0);
  if (entry.badChecksum) {
    sum += 1;
  }
  put(block, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return block;
}

/** The tar bytes of `entries`, with the two zero end blocks unless `eof` is false. */
export function tar(entries: TarTestEntry[], options: { eof?: boolean } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    const body =
      entry.type === "pax"
        ? paxBody(entry.pax ?? {})
        : typeof entry.body === "string"
          ? encoder.encode(entry.body)
          : (entry.body ?? new Uint8Array(0));
    parts.push(header(entry, body.byteLength), body);
    const padding = -body.byteLength & 511;
    if (padding) {
      parts.push(new Uint8Array(padding));
    }
  }
  if (options.eof !== false) {
    parts.push(new Uint8Array(1024));
  }
  return concat(parts);
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/** gzip through the platform's CompressionStream. */
export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A .tar.gz of `entries`. */
export async function tarGz(entries: TarTestEntry[], options: { eof?: boolean } = {}) {
  return gzip(tar(entries, options));
}

export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}
