/**
 * The agent build this coordinator ships, as the build's manifest (a static asset) describes
 * it. Read through the ASSETS binding once per isolate: assets change only with a deploy,
 * which starts new isolates.
 */
import { RELEASE_MANIFEST_PATH, ReleaseManifest } from "@outpost/protocol";

/** What the manifest read needs of the ASSETS binding. */
export type AssetFetcher = { fetch(request: Request): Promise<Response> };

const manifests = new WeakMap<AssetFetcher, Promise<ReleaseManifest | null>>();

/**
 * The shipped build's manifest, or null when the deployment has none (deployed without
 * `npm run build:agent`, or an unreadable manifest, which is logged). A failed read is not
 * cached, so the next request tries again.
 */
export function shippedRelease(assets: AssetFetcher): Promise<ReleaseManifest | null> {
  let pending = manifests.get(assets);
  if (pending === undefined) {
    pending = readManifest(assets);
    manifests.set(assets, pending);
    pending.catch(() => manifests.delete(assets));
  }
  return pending;
}

async function readManifest(assets: AssetFetcher): Promise<ReleaseManifest | null> {
  // The host is never contacted: the binding serves the deployment's own assets by path.
  const res = await assets.fetch(new Request(`https://assets.invalid${RELEASE_MANIFEST_PATH}`));
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`reading ${RELEASE_MANIFEST_PATH} answered ${res.status}`);
  }
  const parsed = ReleaseManifest.safeParse(await res.json().catch(() => null));
  if (!parsed.success) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "unreadable agent release manifest",
        issues: parsed.error.issues,
      }),
    );
    return null;
  }
  return parsed.data;
}
