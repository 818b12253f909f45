/**
 * Dashboard pages for variable sets: the list, creating one, and a set's editor (settings,
 * variables, where it applies). The same services and organization permissions as
 * `/api/v1/variable-sets…`, checked again on every submit.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { decideOrganization } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { listProjects, resolveProject } from "../projects/service.ts";
import { CATEGORIES } from "../variables/model.ts";
import { deleteStoredVariable, listStoredVariables } from "../variables/service.ts";
import { applySet, type LinkTarget, unapplySet } from "../varsets/links.ts";
import { VariableSetName } from "../varsets/model.ts";
import { setVariables } from "../varsets/queries.ts";
import {
  createVariableSet,
  deleteVariableSet,
  listVariableSets,
  putSetVariable,
  resolveVariableSet,
  showVariableSet,
  updateVariableSet,
} from "../varsets/service.ts";
import { listWorkspaces, resolveWorkspace } from "../workspaces/service.ts";
import {
  Checkbox,
  idOf,
  noticeText,
  readForm,
  redirectWithNotice,
  VariableFormFields,
  viewerOf,
} from "./forms.ts";
import { VariableSetPage, VariableSetsPage } from "./pages/varsets.tsx";
import { requireUiPermission, type UiEnv } from "./session.ts";

const NOTICES = {
  saved: "Variable set saved.",
  "variable-saved": "Variable saved.",
  "variable-deleted": "Variable deleted.",
  applied: "Applied.",
  unapplied: "No longer applied there.",
};

const manage = requireUiPermission("variable_sets.manage");

const ctxOf = (c: Context<UiEnv>) => ({
  orgId: c.var.session.orgId,
  actor: actorOf(c.var.session.principal),
  now: c.var.deps.now(),
});

/** The set of the page, in the viewer's organization, else 404. */
async function setOf(c: Context<UiEnv>) {
  const id = idOf(c, "varsetId", "varset");
  const set = await resolveVariableSet(c.var.db, c.var.session.orgId, id);
  if (!set) {
    throw new ApiError("NOT_FOUND", `variable set ${id} not found`);
  }
  return set;
}

const SetFlags = {
  description: z.string().max(1000).default(""),
  global: Checkbox,
  priority: Checkbox,
};

/** The project or workspace of the org a form or path names by id, else 404. */
async function targetOf(c: Context<UiEnv>, type: string, id: string): Promise<LinkTarget> {
  const { orgId } = c.var.session;
  const found =
    type === "project"
      ? await resolveProject(c.var.db, orgId, id)
      : type === "workspace"
        ? await resolveWorkspace(c.var.db, orgId, id)
        : undefined;
  if (!found || (type !== "project" && type !== "workspace")) {
    throw new ApiError("NOT_FOUND", `${type} ${id.slice(0, 40)} not found`);
  }
  return { type, id: found.id, name: found.name };
}

async function renderList(c: Context<UiEnv>, error?: string) {
  const { orgId, principal } = c.var.session;
  const rows = await listVariableSets(c.var.db, orgId, { limit: 200 });
  return c.html(
    <VariableSetsPage
      viewer={viewerOf(c)}
      sets={rows.map((r) => r.set)}
      mayManage={decideOrganization(principal.role, "variable_sets.manage") === "allow"}
      error={error}
    />,
    error ? 409 : 200,
  );
}

export const variableSetPages = new Hono<UiEnv>()
  .use("*", requireUiPermission("variable_sets.read"))
  .get("/", (c) => renderList(c))
  .post("/", manage, async (c) => {
    const form = await readForm(c, z.strictObject({ name: VariableSetName, ...SetFlags }));
    const result = await createVariableSet(c.var.db, ctxOf(c), form);
    if (!result.ok) {
      return renderList(c, `${result.reason.message}.`);
    }
    return c.redirect(`/ui/variable-sets/${result.value.id}`, 303);
  })
  .get("/:varsetId", async (c) => {
    const set = await setOf(c);
    const { principal } = c.var.session;
    const [shown, variables, projects, workspaces] = await Promise.all([
      showVariableSet(c.var.db, set),
      listStoredVariables(setVariables(c.var.db, set.orgId, set.id)),
      listProjects(c.var.db, principal, { limit: 200 }),
      listWorkspaces(c.var.db, principal, { limit: 200 }),
    ]);
    return c.html(
      <VariableSetPage
        viewer={viewerOf(c)}
        set={shown}
        variables={variables}
        projects={projects.map((p) => ({ id: p.row.id, name: p.row.name }))}
        workspaces={workspaces.map((w) => ({ id: w.workspace.id, name: w.workspace.name }))}
        mayManage={decideOrganization(principal.role, "variable_sets.manage") === "allow"}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:varsetId/settings", manage, async (c) => {
    const form = await readForm(c, z.strictObject(SetFlags));
    const set = await setOf(c);
    valueOrThrow(await updateVariableSet(c.var.db, ctxOf(c), set, form));
    return redirectWithNotice(c, `/ui/variable-sets/${set.id}`, "saved");
  })
  .post("/:varsetId/delete", manage, async (c) => {
    await readForm(c, z.strictObject({}));
    const set = await setOf(c);
    await deleteVariableSet(c.var.db, ctxOf(c), set);
    return c.redirect("/ui/variable-sets", 303);
  })
  .post("/:varsetId/vars", manage, async (c) => {
    const form = await readForm(c, VariableFormFields);
    const set = await setOf(c);
    const result = await putSetVariable(c.var.deps, set, {
      key: form.key,
      write: {
        category: form.category,
        value: form.value,
        hcl: form.hcl,
        sensitive: form.sensitive,
        description: form.description,
      },
      actor: ctxOf(c).actor,
      encryptionKey: c.env.ENCRYPTION_KEY,
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/variable-sets/${set.id}`, "variable-saved");
  })
  .post("/:varsetId/vars/:category/:key/delete", manage, async (c) => {
    await readForm(c, z.strictObject({}));
    const set = await setOf(c);
    const category = z.enum(CATEGORIES).safeParse(c.req.param("category"));
    if (!category.success) {
      throw new ApiError("NOT_FOUND", "variable not found");
    }
    const result = await deleteStoredVariable(
      c.var.deps,
      setVariables(c.var.db, set.orgId, set.id),
      {
        key: c.req.param("key"),
        category: category.data,
        actor: ctxOf(c).actor,
      },
    );
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/variable-sets/${set.id}`, "variable-deleted");
  })
  .post("/:varsetId/apply", manage, async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ target: z.string().regex(/^(project|workspace):[a-z]+_[a-z2-7]{26}$/) }),
    );
    const set = await setOf(c);
    const [type = "", id = ""] = form.target.split(":");
    valueOrThrow(await applySet(c.var.db, ctxOf(c), set, await targetOf(c, type, id)));
    return redirectWithNotice(c, `/ui/variable-sets/${set.id}`, "applied");
  })
  .post("/:varsetId/unapply/:type/:id", manage, async (c) => {
    await readForm(c, z.strictObject({}));
    const set = await setOf(c);
    const target = await targetOf(c, c.req.param("type"), c.req.param("id"));
    valueOrThrow(await unapplySet(c.var.db, ctxOf(c), set, target));
    return redirectWithNotice(c, `/ui/variable-sets/${set.id}`, "unapplied");
  });
