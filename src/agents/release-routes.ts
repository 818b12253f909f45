/**
 * `GET /agent/v1/release` and `GET /agent/v1/install.sh`: how a host gets the agent build this
 * coordinator ships. Both are public on purpose: they hold no secret (the build is public
 * static assets too), and a host asks them before it has any token. The files themselves are
 * static assets under `/agent/v1/releases/<version>/`, served before the Worker runs. Every URL
 * in an answer is on the deployment's `PUBLIC_URL` (`src/lib/public-url.ts`), never on the
 * request's `Host`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { AgentRelease, type ReleaseFile } from "@outpost/protocol";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { PUBLIC_URL_UNSET, publicOrigin } from "../lib/public-url.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { installScript } from "./install-script.ts";
import { type ShippedRelease, shippedRelease } from "./release.ts";

const NO_BUILD =
  "this coordinator was deployed without an agent build; run `npm run build:agent` (wrangler deploy runs it) and deploy again";

function download(origin: string, file: ReleaseFile) {
  return {
    url: new URL(file.path, origin).toString(),
    sha256: file.sha256,
    sizeBytes: file.sizeBytes,
  };
}

/** The release answer for `release`, with absolute URLs on the coordinator's public origin. */
export function releaseAnswer(origin: string, release: ShippedRelease): AgentRelease {
  const { manifest } = release;
  const agent = download(origin, manifest.agent);
  return {
    version: manifest.version,
    ...agent,
    npmPackage: download(origin, manifest.npmPackage),
    dockerfile: download(origin, manifest.dockerfile),
    systemdUnit: download(origin, manifest.systemdUnit),
    manifest: release.text,
    signature: release.signature,
  };
}

/** The shipped build and the public origin to name it on; 503 saying why when either is missing. */
async function servable(c: Context<AppEnv>): Promise<{ origin: string; release: ShippedRelease }> {
  const origin = publicOrigin(c.env, c.req.url);
  if (!origin.ok) {
    throw new ApiError("UNAVAILABLE", PUBLIC_URL_UNSET);
  }
  const release = await shippedRelease(c.env.ASSETS);
  if (release === null) {
    throw new ApiError("UNAVAILABLE", NO_BUILD);
  }
  return { origin: origin.value, release };
}

const common = { tags: ["agent"], security: [] };

export const releaseRoutes = newRouter()
  .openapi(
    createRoute({
      ...common,
      method: "get",
      operationId: "getAgentRelease",
      path: "/release",
      summary: "The agent build shipped with this coordinator (no auth)",
      description:
        "Public by design: a host asks before it has a token, and the files are public static assets. `manifest` is the build's manifest exactly as its builder signed it and `signature` the Ed25519 signature (null for an unsigned build): agents trust only the signed manifest. URLs are on the deployment's `PUBLIC_URL` (503 when it is not set, except on loopback development).",
      responses: {
        200: jsonResponse(AgentRelease.openapi("AgentRelease"), "The shipped agent build"),
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const { origin, release } = await servable(c);
      c.header("cache-control", "no-cache");
      return c.json(releaseAnswer(origin, release), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "get",
      operationId: "getAgentInstallScript",
      path: "/install.sh",
      summary: "A POSIX sh installer for the shipped agent build (no auth)",
      description:
        "Download it, read it, run it with `sh install.sh [--prefix DIR] [--user USER] [--systemd] [--release-key KEY] [--docker-context DIR]`. It verifies the release's signature (with `--release-key`, or the key that signed it) and the SHA-256 of everything it downloads before using it. Its addresses are the deployment's `PUBLIC_URL` (503 when it is not set, except on loopback development).",
      responses: {
        200: {
          description: "The installer",
          content: { "text/x-shellscript": { schema: z.string() } },
        },
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const { origin, release } = await servable(c);
      c.header("content-type", "text/x-shellscript; charset=utf-8");
      c.header("cache-control", "no-cache");
      return c.body(installScript(origin, release), 200);
    },
  );
