import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import {
  access,
  chmod,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { promisify } from "node:util";
import { unzipSync } from "fflate";
import { TransientError } from "../errors.ts";
import { describeNetworkError, isTlsTrustError } from "../net/errors.ts";
import { type HttpResponse, httpFetch } from "../net/fetch.ts";
import { retry } from "../retry.ts";
import {
  currentPlatform,
  type Engine,
  isValidEngineVersion,
  type Platform,
  parseSha256Sums,
  releaseLocation,
} from "./release.ts";

const execFileAsync = promisify(execFile);
/** Engine zips are ~30 MB; anything far larger is not a release. */
const MAX_ZIP_BYTES = 512 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;
/** Attempts at a download before the job fails (transient failures only). */
const DOWNLOAD_ATTEMPTS = 5;

export type EngineInstallOptions = {
  engine: Engine;
  version: string;
  dataDir: string;
  releaseMirror: string | null;
  /** Directories searched for an already-installed binary (the host PATH). */
  searchPath?: string;
  platform?: Platform;
  /** Progress lines for the job log. */
  onProgress?: (line: string) => void;
  /** Backoff between download attempts (tests shorten it). */
  retryBaseMs?: number;
};

export type InstalledEngine = { path: string; source: "cache" | "path" | "download" };

/** Raised when a release cannot be trusted or found; the job fails with this message. */
export class EngineInstallError extends Error {
  override name = "EngineInstallError";
}

const inFlight = new Map<string, Promise<InstalledEngine>>();

/**
 * Returns an executable of `engine` at exactly `version`: from the per-version cache under
 * `dataDir/engines`, else a binary on `searchPath` whose `version -json` reports that version,
 * else downloaded from the release mirror. A download is used only if the zip's SHA-256 equals
 * its entry in the release's SHA256SUMS (a missing entry or mismatch is refused). Installs are
 * built in a temp dir and renamed into place, so concurrent installs of one version (in this
 * process or another agent sharing the data dir) never expose a half-written binary.
 */
export function ensureEngine(options: EngineInstallOptions): Promise<InstalledEngine> {
  if (!isValidEngineVersion(options.version)) {
    return Promise.reject(
      new EngineInstallError(`invalid ${options.engine} version "${options.version}"`),
    );
  }
  const key = `${options.dataDir}\0${options.engine}\0${options.version}`;
  const running = inFlight.get(key);
  if (running) {
    return running;
  }
  const promise = install(options).finally(() => inFlight.delete(key));
  inFlight.set(key, promise);
  return promise;
}

async function install(options: EngineInstallOptions): Promise<InstalledEngine> {
  const { engine, version } = options;
  const versionDir = path.join(options.dataDir, "engines", engine, version);
  const cached = path.join(versionDir, engine);
  if (await isExecutable(cached)) {
    return { path: cached, source: "cache" };
  }
  const search = await findOnPath(engine, version, options.searchPath ?? "");
  if (search.match !== null) {
    options.onProgress?.(`Using ${engine} ${version} found at ${search.match}`);
    return { path: search.match, source: "path" };
  }
  let attempts = 0;
  try {
    await retry(
      () => {
        attempts += 1;
        return download(options, versionDir);
      },
      {
        retries: DOWNLOAD_ATTEMPTS - 1,
        ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
        onRetry: ({ error, waitMs }) =>
          options.onProgress?.(
            `Download attempt ${attempts} failed (${(error as Error).message}); retrying in ${(waitMs / 1000).toFixed(1)} s`,
          ),
      },
    );
  } catch (error) {
    const unused = search.unused.map((c) => `${c.path} (${c.reported})`).join(", ");
    throw new EngineInstallError(
      `cannot install ${engine} ${version}: ${(error as Error).message} ` +
        `(${attempts} attempt${attempts === 1 ? "" : "s"})` +
        (unused ? `; found on PATH but not used: ${unused}` : `; no ${engine} on PATH`),
    );
  }
  return { path: cached, source: "download" };
}

async function download(options: EngineInstallOptions, versionDir: string): Promise<void> {
  const { engine, version } = options;
  const where = releaseLocation(
    engine,
    version,
    options.platform ?? currentPlatform(),
    options.releaseMirror,
  );
  options.onProgress?.(`Downloading ${engine} ${version} from ${where.zipUrl}`);
  const sums = parseSha256Sums((await fetchOk(where.sumsUrl)).toString("utf8"));
  const expected = sums.get(where.zipName);
  if (expected === undefined) {
    throw new EngineInstallError(
      `${where.sumsUrl} has no checksum for ${where.zipName}; refusing to install`,
    );
  }
  const parent = path.dirname(versionDir);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(path.join(parent, `.tmp-${version}-`));
  try {
    const zipFile = path.join(tmp, where.zipName);
    const actual = await downloadTo(where.zipUrl, zipFile);
    if (actual !== expected) {
      throw new EngineInstallError(
        `checksum mismatch for ${where.zipName}: expected ${expected}, got ${actual}; refusing to install`,
      );
    }
    const staged = path.join(tmp, version);
    await mkdir(staged);
    await writeFile(
      path.join(staged, engine),
      extractBinary(await readFile(zipFile), engine, where.zipName),
      {
        mode: 0o755,
      },
    );
    await chmod(path.join(staged, engine), 0o755);
    try {
      await rename(staged, versionDir);
    } catch (error) {
      // Another install of the same version won the race; its binary is verified too.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EEXIST" && code !== "ENOTEMPTY") {
        throw error;
      }
    }
    options.onProgress?.(`Installed ${engine} ${version} (sha256 ${actual})`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

function extractBinary(zip: Buffer, engine: Engine, zipName: string): Uint8Array {
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(zip, { filter: (file) => file.name === engine });
  } catch (error) {
    throw new EngineInstallError(`${zipName} is not a valid zip: ${(error as Error).message}`);
  }
  const binary = files[engine];
  if (binary === undefined) {
    throw new EngineInstallError(`${zipName} does not contain ${engine}`);
  }
  return binary;
}

/** The body of `url`; transient failures throw TransientError, the rest EngineInstallError. */
export async function fetchOk(url: string): Promise<Buffer> {
  const res = await request(url);
  return Buffer.from(await res.arrayBuffer());
}

async function request(url: string): Promise<HttpResponse> {
  let res: HttpResponse;
  try {
    res = await httpFetch(url, {
      signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS),
      redirect: "follow",
    });
  } catch (cause) {
    const message = `cannot download ${url}: ${describeNetworkError(cause)}`;
    // An untrusted certificate stays untrusted however often it is asked.
    throw isTlsTrustError(cause)
      ? new EngineInstallError(message)
      : new TransientError(message, { cause });
  }
  if (res.status === 429 || res.status >= 500) {
    await res.body?.cancel();
    throw new TransientError(`${url} answered ${res.status}`, {
      retryAfter: res.headers.get("retry-after"),
    });
  }
  if (!res.ok || res.body === null) {
    await res.body?.cancel();
    throw new EngineInstallError(`${url} answered ${res.status}`);
  }
  return res;
}

/** Streams `url` to `file`, returning the hex SHA-256 of what was written. */
export async function downloadTo(url: string, file: string): Promise<string> {
  const res = await request(url);
  const hash = createHash("sha256");
  let size = 0;
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  body.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_ZIP_BYTES) {
      body.destroy(new EngineInstallError(`${url} is larger than ${MAX_ZIP_BYTES} bytes`));
      return;
    }
    hash.update(chunk);
  });
  await pipeline(body, createWriteStream(file));
  return hash.digest("hex");
}

/** True for an executable regular file. */
export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** Binaries of `engine` on the search path: the first at exactly `version`, and the others. */
type PathSearch = { match: string | null; unused: Array<{ path: string; reported: string }> };

/** The first `engine` on `searchPath` whose `version -json` reports exactly `version`. */
async function findOnPath(
  engine: Engine,
  version: string,
  searchPath: string,
): Promise<PathSearch> {
  const unused: PathSearch["unused"] = [];
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) {
      continue;
    }
    const candidate = path.join(dir, engine);
    if (!(await isExecutable(candidate))) {
      continue;
    }
    try {
      const { stdout } = await execFileAsync(candidate, ["version", "-json"], {
        timeout: 15_000,
        env: { PATH: searchPath, HOME: process.env.HOME ?? "/" },
      });
      const reported = (JSON.parse(stdout) as { terraform_version?: unknown }).terraform_version;
      if (reported === version) {
        return { match: candidate, unused };
      }
      unused.push({ path: candidate, reported: `reports ${String(reported)}` });
    } catch {
      // Not a working engine binary (or too old for -json): keep looking.
      unused.push({ path: candidate, reported: "no version -json" });
    }
  }
  return { match: null, unused };
}
