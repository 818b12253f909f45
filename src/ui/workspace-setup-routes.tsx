/**
 * Dashboard forms that make and shape workspaces: create one, change every setting, delete it,
 * and upload a configuration (a `.tar.gz` file input). Each goes through the same service and
 * the same `may` decision as `/api/v1/workspaces…` and its configuration-versions route; the
 * services hold every rule, the routes only read the form.
 */
import { z } from "@hono/zod-openapi";
import { ENGINES } from "@outpost/protocol";
import { type Context, Hono } from "hono";
import { authorizeProject } from "../authz/http.ts";
import { actorOf } from "../authz/principal.ts";
import { uploadLimits } from "../configuration-versions/model.ts";
import { uploadConfigurationVersion } from "../configuration-versions/service.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { defaultProject, resolveProject } from "../projects/service.ts";
import { deleteWorkspace } from "../workspaces/delete.ts";
import { EXECUTION_MODES, type SettingsInput } from "../workspaces/model.ts";
import { UpdateWorkspace } from "../workspaces/schemas.ts";
import { createWorkspace, updateWorkspace } from "../workspaces/service.ts";
import { Checkbox, readForm, redirectWithNotice } from "./forms.ts";
import { requireUiPermission, type UiEnv } from "./session.ts";
import { workspaceOf } from "./workspace-routes.tsx";

/** Text fields: the services check their grammar; the form only bounds their size. */
const text = (max: number) => z.string().trim().max(max).default("");

/** The settings both the create and the configure form carry. */
const SettingsFields = {
  name: z.string().trim().min(1, "a workspace needs a name").max(90),
  description: text(2000),
  project: text(200),
  executionMode: z.enum(EXECUTION_MODES),
  pool: text(200),
  engine: z.enum(ENGINES),
  engineVersion: text(64),
  autoApply: Checkbox,
  workingDirectory: text(500),
  vcsRepoUrl: text(2000),
  vcsBranch: text(255),
  vcsTriggerPaths: text(10_000),
  stackName: text(300),
};
const SettingsForm = z.strictObject(SettingsFields);
type SettingsFormValue = z.output<typeof SettingsForm>;

/** The upload form: one file; its size limit is the API's (CONFIGURATION_MAX_BYTES). */
const UploadForm = z.strictObject({
  configuration: z.instanceof(File, { message: "choose a .tar.gz file to upload" }),
});

const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

/**
 * The form's settings as the service takes them: empty optional fields are "none" (null), the
 * trigger paths one a line or comma-separated, the pool by id or name (the service resolves it).
 */
function settingsOf(form: SettingsFormValue): SettingsInput {
  const paths = form.vcsTriggerPaths
    .split(/[\n,]/)
    .map((p) => p.trim())
    .filter((p) => p !== "");
  const settings = {
    name: form.name,
    description: form.description,
    executionMode: form.executionMode,
    poolId: form.pool === "" ? null : form.pool,
    engine: form.engine,
    ...(form.engineVersion === "" ? {} : { engineVersion: form.engineVersion }),
    autoApply: form.autoApply,
    workingDirectory: form.workingDirectory,
    vcsRepoUrl: form.vcsRepoUrl === "" ? null : form.vcsRepoUrl,
    vcsBranch: form.vcsRepoUrl === "" || form.vcsBranch === "" ? null : form.vcsBranch,
    vcsTriggerPaths: form.vcsRepoUrl === "" || paths.length === 0 ? null : paths,
    stackName: form.engine !== "pulumi" || form.stackName === "" ? null : form.stackName,
  };
  // The API's own body schema holds each field's grammar; the form answers with its sentence.
  const parsed = UpdateWorkspace.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ApiError("BAD_REQUEST", `${issue?.path.join(".") || "form"}: ${issue?.message}`);
  }
  return parsed.data;
}

/** The project the form names (by id or name), once the viewer may add workspaces to it. */
async function projectOf(c: Context<UiEnv>, ref: string) {
  const { principal } = c.var.session;
  const project = await resolveProject(c.var.db, principal.orgId, ref);
  if (!project) {
    throw new ApiError("BAD_REQUEST", `project: no project named ${ref} in this organization`);
  }
  await authorizeProject(c.var.db, principal, "project.add_workspace", project);
  return project;
}

export const workspaceSetupPages = new Hono<UiEnv>()
  .post("/", requireUiPermission("workspace.create"), async (c) => {
    const form = await readForm(c, SettingsForm);
    const { orgId } = c.var.session;
    const project =
      form.project === ""
        ? await defaultProject(c.var.deps, orgId)
        : await projectOf(c, form.project);
    const settings = settingsOf(form);
    const created = valueOrThrow(
      await createWorkspace(c.var.deps, {
        orgId,
        actor: actor(c),
        projectId: project.id,
        settings: { ...settings, name: form.name },
      }),
    );
    return redirectWithNotice(c, `/ui/workspaces/${created.name}`, "created");
  })
  .post("/:workspaceId/configure", async (c) => {
    const { row } = await workspaceOf(c, "workspace.update");
    const form = await readForm(c, SettingsForm);
    const project =
      form.project === "" || form.project === row.projectId
        ? undefined
        : await projectOf(c, form.project);
    const settings = settingsOf(form);
    const updated = valueOrThrow(
      await updateWorkspace(c.var.deps, {
        orgId: c.var.session.orgId,
        ref: row.id,
        actor: actor(c),
        patch: settings,
        projectId: project?.id,
      }),
    );
    return redirectWithNotice(c, `/ui/workspaces/${updated.name}`, "saved");
  })
  .post("/:workspaceId/delete", async (c) => {
    const { row } = await workspaceOf(c, "workspace.delete");
    const form = await readForm(c, z.strictObject({ confirm: z.string().max(200) }));
    if (form.confirm !== row.name) {
      throw new ApiError("BAD_REQUEST", `confirm: type the workspace's name, ${row.name}`);
    }
    valueOrThrow(
      await deleteWorkspace(c.var.deps, {
        orgId: c.var.session.orgId,
        ref: row.id,
        actor: actor(c),
      }),
    );
    return redirectWithNotice(c, "/ui/workspaces", "deleted");
  })
  .post("/:workspaceId/configurations", async (c) => {
    const { row } = await workspaceOf(c, "configuration.upload");
    const { configuration: file } = await readForm(c, UploadForm);
    if (file.size === 0) {
      throw new ApiError("BAD_REQUEST", "configuration: the file is empty; choose a .tar.gz");
    }
    const limits = uploadLimits(c.env);
    if (file.size > limits.maxBytes) {
      throw new ApiError("PAYLOAD_TOO_LARGE", `the file is larger than ${limits.maxBytes} bytes`);
    }
    valueOrThrow(
      await uploadConfigurationVersion(c.var.deps, {
        orgId: c.var.session.orgId,
        workspaceId: row.id,
        actor: actor(c),
        body: file.stream(),
        contentLength: file.size,
        limits,
        expected: { engine: row.engine, workingDirectory: row.workingDirectory },
      }),
    );
    return redirectWithNotice(c, `/ui/workspaces/${row.name}`, "uploaded");
  });

/** Whether a dashboard path is the configuration upload, whose body may exceed a form's limit. */
export function isUploadPath(path: string): boolean {
  return /^\/ui\/workspaces\/[^/]+\/configurations$/.test(path);
}
