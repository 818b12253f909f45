import { gzipSync } from "node:zlib";

/** One raw tar entry; `type` is the ustar typeflag ("0" file, "5" dir, "1" hard link, "2" symlink). */
export type TarEntry = {
  name: string;
  type?: string;
  body?: string | Buffer;
  linkname?: string;
  size?: number;
  mode?: number;
};

function field(buf: Buffer, offset: number, length: number, value: string): void {
  buf.write(value.slice(0, length), offset, length, "utf8");
}

function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, "0")}\0`;
}

/**
 * Builds a gzipped tar by hand, so tests can make archives no well-behaved tool would write:
 * `../` and absolute names, links pointing outside, lying sizes.
 */
export function buildTarGz(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? "");
    const header = Buffer.alloc(512);
    field(header, 0, 100, entry.name);
    field(header, 100, 8, octal(entry.mode ?? (entry.type === "5" ? 0o755 : 0o644), 8));
    field(header, 108, 8, octal(0, 8));
    field(header, 116, 8, octal(0, 8));
    field(header, 124, 12, octal(entry.size ?? body.length, 12));
    field(header, 136, 12, octal(1_700_000_000, 12));
    field(header, 148, 8, "        ");
    field(header, 156, 1, entry.type ?? "0");
    field(header, 157, 100, entry.linkname ?? "");
    field(header, 257, 6, "ustar\0");
    field(header, 263, 2, "00");
    let sum = 0;
    for (const byte of header) {
      sum += byte;
    }
    field(header, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
