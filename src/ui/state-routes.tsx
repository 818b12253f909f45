/**
 * The dashboard's state page for a workspace (`/ui/workspaces/{id}/state`): outputs, versions,
 * downloads, the outputs diff, admin reveal and rollback. Same services and roles as
 * `/api/v1/workspaces/{id}/state-versions…`, checked again here.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import type { Principal } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { PageQuery } from "../lib/paging.ts";
import { diffVersionOutputs, readOutputs } from "../state/output-reads.ts";
import { listVersionResources } from "../state/resources.ts";
import { md5Base64 } from "../state/service.ts";
import { downloadVersion, getVersion, listVersions, rollbackState } from "../state/versions.ts";

import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { StatePage } from "./pages/state.tsx";
import type { UiEnv } from "./session.ts";
import { workspaceOf } from "./workspace-routes.tsx";

const NOTICES = { "rolled-back": "Rolled back: the chosen version is the current state again." };
const VERSION_ID = /^sv_[a-z2-7]{26}$/;

function principalOf(c: Context<UiEnv>): Principal {
  return c.var.session.principal;
}

/**
 * The current version's resource addresses for the page: null without state, a sentence when
 * they cannot be read (an encrypted state).
 */
async function currentResources(
  c: Context<UiEnv>,
  workspaceId: string,
  versions: readonly { id: string; isCurrent: boolean }[],
): Promise<string[] | string | null> {
  const current = versions.find((v) => v.isCurrent);
  if (!current) {
    return null;
  }
  const result = await listVersionResources(c.var.deps, principalOf(c), workspaceId, current.id);
  if (!result.ok) {
    return result.reason.message;
  }
  return result.value.resources.map((r) => r.address);
}

/** The page, with outputs revealed when an admin asked for them (by POST, so it is audited). */
async function renderState(c: Context<UiEnv>, reveal: boolean) {
  const { row: ws, grants } = await workspaceOf(c, reveal ? "state.reveal" : "workspace.read");
  const principal = principalOf(c);
  const page = PageQuery.safeParse({ limit: 50, cursor: c.req.query("cursor") });
  if (!page.success) {
    throw new ApiError("BAD_REQUEST", "that link to older versions is not valid");
  }
  const [outputs, versions] = await Promise.all([
    readOutputs(c.var.deps, principal, ws.id, reveal).then(valueOrThrow),
    listVersions(c.var.deps, principal, ws.id, page.data).then(valueOrThrow),
  ]);
  const resources = await currentResources(c, ws.id, versions.stateVersions);
  const from = c.req.query("from");
  const to = c.req.query("to");
  let diff = null;
  if (from !== undefined && to !== undefined) {
    if (!VERSION_ID.test(from) || !VERSION_ID.test(to)) {
      throw new ApiError("BAD_REQUEST", "choose two state versions to compare");
    }
    const ids = { fromId: from, toId: to };
    diff = {
      from,
      to,
      changes: valueOrThrow(await diffVersionOutputs(c.var.deps, principal, ws.id, ids)),
    };
  }
  return c.html(
    <StatePage
      viewer={viewerOf(c, grants)}
      workspace={{ id: ws.id, name: ws.name }}
      outputs={{
        outputs: outputs.outputs,
        isRevealed: outputs.isRevealed,
        status: outputs.outputsStatus,
      }}
      versions={versions.stateVersions}
      resources={resources}
      nextCursor={versions.nextCursor}
      diff={diff}
      notice={noticeText(c, NOTICES)}
    />,
  );
}

export const statePages = new Hono<UiEnv>()
  .get("/:workspaceId/state", (c) => renderState(c, false))
  .post("/:workspaceId/state/reveal", async (c) => {
    await readForm(c, z.strictObject({}));
    return renderState(c, true);
  })
  .get("/:workspaceId/state/versions/:stateVersionId/download", async (c) => {
    const { row: ws } = await workspaceOf(c, "state.download");
    const versionId = idOf(c, "stateVersionId", "sv");
    const state = valueOrThrow(await downloadVersion(c.var.deps, principalOf(c), ws.id, versionId));
    return new Response(state.body, {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(state.sizeBytes),
        "content-md5": md5Base64(state.md5Hex),
        "content-disposition": `attachment; filename="${ws.name}-${state.version.serial}.tfstate"`,
      },
    });
  })
  .post("/:workspaceId/state/versions/:stateVersionId/rollback", async (c) => {
    // The form (CSRF, fields) first: a bad body is 400 whatever the ids.
    const form = await readForm(c, z.strictObject({ confirm: z.string().max(100) }));
    const { row: ws } = await workspaceOf(c, "state.rollback");
    const versionId = idOf(c, "stateVersionId", "sv");
    const target = valueOrThrow(await getVersion(c.var.deps, principalOf(c), ws.id, versionId));
    // The typed text is checked here too, so the form works without the script.
    if (form.confirm.trim() !== `serial ${target.serial}`) {
      throw new ApiError("BAD_REQUEST", `type "serial ${target.serial}" to confirm the rollback`);
    }
    valueOrThrow(
      await rollbackState(c.var.deps, {
        principal: principalOf(c),
        workspaceId: ws.id,
        stateVersionId: versionId,
      }),
    );
    return redirectWithNotice(c, `/ui/workspaces/${ws.id}/state`, "rolled-back");
  });
