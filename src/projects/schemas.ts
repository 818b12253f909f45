/** Request and response shapes of the project routes. */
import { z } from "@hono/zod-openapi";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { ProjectDescription, ProjectName, ProjectRef } from "./model.ts";

export const ProjectSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    isDefault: z.boolean().openapi({
      description:
        "The organization's default project, where workspaces created without a project go; it cannot be deleted",
    }),
    workspaceCount: z.int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Project");

export const CreateProject = z
  .strictObject({ name: ProjectName, description: ProjectDescription.optional() })
  .openapi("CreateProject");

export const UpdateProject = z
  .strictObject({ name: ProjectName.optional(), description: ProjectDescription.optional() })
  .refine((body) => Object.keys(body).length > 0, "name at least one field to change")
  .openapi("UpdateProject");

export const ProjectParams = z.strictObject({
  projectId: ProjectRef.openapi({ param: { name: "projectId", in: "path" } }),
});

export const ProjectTeamAccessSchema = z
  .object({
    projectId: z.string(),
    teamId: z.string(),
    teamName: z.string(),
    access: z.enum(ACCESS_LEVELS),
    updatedAt: z.string(),
  })
  .openapi("ProjectTeamAccess");
