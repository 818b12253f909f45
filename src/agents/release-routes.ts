/**
 * `GET /agent/v1/release` and `GET /agent/v1/install.sh`: how a host gets the agent build this
 * coordinator ships. Both are public on purpose: they hold no secret (the build is public
 * static assets too), and a host asks them before it has any token. The files themselves are
 * static assets under `/agent/v1/releases/<version>/`, served before the Worker runs.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { AgentRelease, type ReleaseFile, type ReleaseManifest } from "@outpost/protocol";
import { ApiError } from "../errors.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { installScript } from "./install-script.ts";
import { shippedRelease } from "./release.ts";

const NO_BUILD =
  "this coordinator was deployed without an agent build; run `npm run build:agent` (wrangler deploy runs it) and deploy again";

function download(origin: string, file: ReleaseFile) {
  return {
    url: new URL(file.path, origin).toString(),
    sha256: file.sha256,
    sizeBytes: file.sizeBytes,
  };
}

/** The release answer for `manifest`, with absolute URLs on the coordinator's own origin. */
export function releaseAnswer(origin: string, manifest: ReleaseManifest): AgentRelease {
  const agent = download(origin, manifest.agent);
  return {
    version: manifest.version,
    ...agent,
    npmPackage: download(origin, manifest.npmPackage),
    dockerfile: download(origin, manifest.dockerfile),
    systemdUnit: download(origin, manifest.systemdUnit),
  };
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
        "Public by design: a host asks before it has a token, and the files are public static assets. `url` serves exactly the bytes of `sha256`, a single file that runs with `node <file>`.",
      responses: {
        200: jsonResponse(AgentRelease.openapi("AgentRelease"), "The shipped agent build"),
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const manifest = await shippedRelease(c.env.ASSETS);
      if (manifest === null) {
        throw new ApiError("UNAVAILABLE", NO_BUILD);
      }
      c.header("cache-control", "no-cache");
      return c.json(releaseAnswer(new URL(c.req.url).origin, manifest), 200);
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
        "Download it, read it, run it with `sh install.sh [--prefix DIR] [--user USER] [--systemd] [--docker-context DIR]`. It verifies the SHA-256 of everything it downloads before using it.",
      responses: {
        200: {
          description: "The installer",
          content: { "text/x-shellscript": { schema: z.string() } },
        },
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const manifest = await shippedRelease(c.env.ASSETS);
      if (manifest === null) {
        throw new ApiError("UNAVAILABLE", NO_BUILD);
      }
      c.header("content-type", "text/x-shellscript; charset=utf-8");
      c.header("cache-control", "no-cache");
      return c.body(installScript(new URL(c.req.url).origin, manifest), 200);
    },
  );
