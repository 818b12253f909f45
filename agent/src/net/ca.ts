import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import tls from "node:tls";
import { UserError } from "../errors.ts";

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads a PEM file of CA certificates and checks every block parses as an X.509 certificate.
 * Throws {@link UserError} naming `source` (the flag or variable that named the file).
 */
export function readCaFile(file: string, source: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UserError(`${source} ${file}: cannot read the file (${code})`);
  }
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) {
    throw new UserError(
      `${source} ${file}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    );
  }
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new UserError(`${source} ${file}: a certificate does not parse (${why})`);
    }
  }
  return blocks;
}

/**
 * The CAs the agent trusts: Node's defaults (its bundled roots plus `NODE_EXTRA_CA_CERTS`) and
 * `extra`. An explicit CA list replaces the defaults in TLS options, so they are listed too.
 */
export function trustedCas(extra: readonly string[]): string[] {
  const defaults =
    typeof tls.getCACertificates === "function"
      ? tls.getCACertificates("default")
      : [...tls.rootCertificates];
  return [...defaults, ...extra];
}

/**
 * Writes the full trust list as one PEM bundle for programs that take a file (engines through
 * `SSL_CERT_FILE`, git through `GIT_SSL_CAINFO`); returns its path. Written by rename, so a job
 * starting meanwhile never reads half a bundle.
 */
export async function writeCaBundle(dataDir: string, extra: readonly string[]): Promise<string> {
  const file = path.join(dataDir, "ca-certificates.pem");
  await mkdir(dataDir, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${trustedCas(extra).join("\n")}\n`, { mode: 0o644 });
  await rename(temp, file);
  return file;
}
