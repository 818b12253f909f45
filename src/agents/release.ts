/**
 * The agent build this coordinator ships, as the build's manifest (a static asset) describes
 * it, with the signature its builder made. Read through the ASSETS binding once per isolate:
 * assets change only with a deploy, which starts new isolates. The Worker only serves the
 * signature: it holds no release key and verifies nothing (agents and the installer do).
 */
import {
  RELEASE_MANIFEST_PATH,
  RELEASE_SIGNATURE_PATH,
  ReleaseManifest,
  ReleaseSignature,
} from "@outpost/protocol";

/** What the manifest read needs of the ASSETS binding. */
export type AssetFetcher = { fetch(request: Request): Promise<Response> };

/** The shipped build: its manifest, the manifest file's exact text, and its signature. */
export type ShippedRelease = {
  manifest: ReleaseManifest;
  /** The bytes the signature signs (after the context line), as served. */
  text: string;
  /** Null when the build carries no signature (built before releases were signed). */
  signature: ReleaseSignature | null;
};

const manifests = new WeakMap<AssetFetcher, Promise<ShippedRelease | null>>();

/**
 * The shipped build, or null when the deployment has none (deployed without
 * `npm run build:agent`, or an unreadable manifest, which is logged). A failed read is not
 * cached, so the next request tries again.
 */
export function shippedRelease(assets: AssetFetcher): Promise<ShippedRelease | null> {
  let pending = manifests.get(assets);
  if (pending === undefined) {
    pending = readManifest(assets);
    manifests.set(assets, pending);
    pending.catch(() => manifests.delete(assets));
  }
  return pending;
}

/** An asset's text, or null when the deployment has no such file. */
async function readAsset(assets: AssetFetcher, path: string): Promise<string | null> {
  // The host is never contacted: the binding serves the deployment's own assets by path.
  const res = await assets.fetch(new Request(`https://assets.invalid${path}`));
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`reading ${path} answered ${res.status}`);
  }
  return res.text();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function readManifest(assets: AssetFetcher): Promise<ShippedRelease | null> {
  const [text, signatureText] = await Promise.all([
    readAsset(assets, RELEASE_MANIFEST_PATH),
    readAsset(assets, RELEASE_SIGNATURE_PATH),
  ]);
  if (text === null) {
    return null;
  }
  const parsed = ReleaseManifest.safeParse(parseJson(text));
  if (!parsed.success) {
    logUnreadable("unreadable agent release manifest", parsed.error.issues);
    return null;
  }
  const signature =
    signatureText === null ? null : ReleaseSignature.safeParse(parseJson(signatureText));
  if (signature !== null && !signature.success) {
    // Served as unsigned: agents refuse it and say so, which is the operator's cue.
    logUnreadable("unreadable agent release signature", signature.error.issues);
  }
  return { manifest: parsed.data, text, signature: signature?.success ? signature.data : null };
}

function logUnreadable(msg: string, issues: unknown): void {
  console.error(JSON.stringify({ level: "error", msg, issues }));
}
