import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { zipSync } from "fflate";
import { detachedSignature, type TestSigner } from "./signing.ts";
import { buildTarGz } from "./tarball.ts";

export const STANDIN_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../fixtures/terraform",
);

export const PULUMI_STANDIN_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../fixtures/pulumi",
);

/** The stand-in engine's source, reporting `version` instead of its default. */
export function standinSource(version: string): Buffer {
  const source = readFileSync(STANDIN_PATH, "utf8");
  const replaced = source.replace(
    /const VERSION = "[^"]+"; \/\/ standin-version/,
    `const VERSION = "${version}"; // standin-version`,
  );
  if (replaced === source && !source.includes(`const VERSION = "${version}"`)) {
    throw new Error("stand-in version marker not found");
  }
  return Buffer.from(replaced);
}

/** A release zip as HashiCorp/OpenTofu publish it: the binary plus a licence file. */
export function releaseZip(engine: string, version: string): Buffer {
  return Buffer.from(
    zipSync({ [engine]: standinSource(version), "LICENSE.txt": Buffer.from("MPL-2.0\n") }),
  );
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Where a checksums file's detached OpenPGP signature is, as the agent looks for it. */
const SIGNATURE = /^(.+(?:_SHA256SUMS|-checksums\.txt))\.(?:sig|gpgsig)$/;

/**
 * A release mirror on 127.0.0.1 laid out as `/{engine}/{version}/{file}`. Files are set per
 * test; every request is recorded; `delayMs` slows zip answers to make install races overlap.
 * With a `signer`, it signs as a mirror that re-signs releases does: a request for a checksums
 * file's signature (`…_SHA256SUMS.sig`/`.gpgsig`, `…-checksums.txt.gpgsig`) that `files` does
 * not hold is answered with the signer's detached signature of that checksums file as it is now.
 */
export class MirrorServer {
  readonly files = new Map<string, Buffer>();
  readonly requests: string[] = [];
  delayMs = 0;
  signer: TestSigner | null = null;
  private server: Server | null = null;
  private readonly tls: { key: string; cert: string } | null;

  /** With `tls`, an HTTPS mirror with that key and certificate. */
  constructor(options: { tls?: { key: string; cert: string } } = {}) {
    this.tls = options.tls ?? null;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) {
      throw new Error("mirror not started");
    }
    return `${this.tls ? "https" : "http"}://127.0.0.1:${address.port}`;
  }

  /**
   * Publishes a correct release of the stand-in (zip + SHA256SUMS) for linux/amd64 and lists
   * it in `/{engine}/index.json` (see {@link listInIndex} for its shape).
   */
  publish(engine: string, version: string, platform = { os: "linux", arch: "amd64" }): Buffer {
    const zipName = `${engine}_${version}_${platform.os}_${platform.arch}.zip`;
    this.listInIndex(engine, version, { ...platform, filename: zipName });
    const zip = releaseZip(engine, version);
    this.files.set(`/${engine}/${version}/${zipName}`, zip);
    this.files.set(
      `/${engine}/${version}/${engine}_${version}_SHA256SUMS`,
      Buffer.from(
        `${sha256Hex(Buffer.from("other"))}  ${engine}_${version}_darwin_arm64.zip\n${sha256Hex(zip)}  ${zipName}\n`,
      ),
    );
    return zip;
  }

  /**
   * Adds `version` to the engine's index without publishing its files: OpenTofu's index in the
   * shape of get.opentofu.org's `api.json` (`{"versions": [{"id": …}]}`), the others in the
   * releases.hashicorp.com shape (`{"versions": {"1.9.5": {…}}}`).
   */
  listInIndex(engine: string, version: string, build?: Record<string, string>): void {
    const key = `/${engine}/index.json`;
    const current = this.files.get(key);
    if (engine === "tofu") {
      const index = current
        ? (JSON.parse(current.toString("utf8")) as { versions: Array<{ id: string }> })
        : { versions: [] as Array<{ id: string }> };
      index.versions.unshift({ id: version, ...(build ? { files: [build.filename] } : {}) });
      this.files.set(key, Buffer.from(JSON.stringify(index)));
      return;
    }
    const index = current
      ? (JSON.parse(current.toString("utf8")) as { versions: Record<string, unknown> })
      : { name: engine, versions: {} as Record<string, unknown> };
    index.versions[version] = {
      name: engine,
      version,
      shasums: `${engine}_${version}_SHA256SUMS`,
      builds: build ? [{ name: engine, version, ...build }] : [],
    };
    this.files.set(key, Buffer.from(JSON.stringify(index)));
  }

  /**
   * Publishes a Pulumi release of the stand-in as Pulumi does: `pulumi-v<v>-<os>-<arch>.tar.gz`
   * holding `pulumi/pulumi`, the `pulumi-<v>-checksums.txt` beside it, and the version in
   * `/pulumi/index.json`.
   */
  publishPulumi(version: string, platform = { os: "linux", arch: "x64" }): Buffer {
    const source = readFileSync(PULUMI_STANDIN_PATH, "utf8").replace(
      /const VERSION = "[^"]+"; \/\/ standin-version/,
      `const VERSION = "${version}"; // standin-version`,
    );
    const name = `pulumi-v${version}-${platform.os}-${platform.arch}.tar.gz`;
    const archive = buildTarGz([
      { name: "pulumi/", type: "5" },
      { name: "pulumi/pulumi", body: source, mode: 0o755 },
      { name: "pulumi/pulumi-language-yaml", body: "#!/bin/sh\n", mode: 0o755 },
    ]);
    this.files.set(`/pulumi/${version}/${name}`, archive);
    this.files.set(
      `/pulumi/${version}/pulumi-${version}-checksums.txt`,
      Buffer.from(`${sha256Hex(archive)}  ${name}\n`),
    );
    this.pulumiVersions.add(version);
    const versions = Object.fromEntries([...this.pulumiVersions].map((v) => [v, { version: v }]));
    this.files.set("/pulumi/index.json", Buffer.from(JSON.stringify({ name: "pulumi", versions })));
    return archive;
  }

  private readonly pulumiVersions = new Set<string>();

  async start(): Promise<void> {
    const handler: Parameters<typeof createServer>[1] = (req, res) => {
      const url = req.url ?? "/";
      this.requests.push(url);
      const body = this.files.get(url);
      if (body === undefined) {
        const signed = this.signatureOf(url);
        if (signed === null) {
          res.writeHead(404).end("not found");
          return;
        }
        signed.then(
          (signature) => res.writeHead(200).end(signature),
          (error: unknown) => res.writeHead(500).end(String(error)),
        );
        return;
      }
      setTimeout(
        () => res.writeHead(200, { "content-length": body.length }).end(body),
        url.endsWith(".zip") ? this.delayMs : 0,
      );
    };
    this.server = this.tls ? createTlsServer(this.tls, handler) : createServer(handler);
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  }

  /** The signer's signature of the checksums file `url` signs, or null (404). */
  private signatureOf(url: string): Promise<Buffer> | null {
    const sums = SIGNATURE.exec(url)?.[1];
    const data = sums === undefined ? undefined : this.files.get(sums);
    return this.signer === null || data === undefined ? null : detachedSignature(this.signer, data);
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
}
