/** Request and response shapes of the variable set routes. */
import { z } from "@hono/zod-openapi";
import { ProjectRef } from "../projects/model.ts";
import { Key } from "../variables/routes.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { VariableSetName, VariableSetRef } from "./model.ts";

const Named = z.object({ id: z.string(), name: z.string() });

export const VariableSetSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    global: z.boolean().openapi({
      description: "Applies to every workspace of the organization, now and later",
    }),
    priority: z.boolean().openapi({
      description:
        "Its variables win over the workspace's own variables and over non-priority sets",
    }),
    projects: z.array(Named).openapi({ description: "Projects it is applied to" }),
    workspaces: z.array(Named).openapi({ description: "Workspaces it is applied to by name" }),
    variableCount: z.int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("VariableSet");

const fields = {
  description: z.string().max(1000).optional(),
  global: z.boolean().optional().openapi({
    description:
      "Default false. Making a set global drops its project and workspace links; two global sets may not set the same variable",
  }),
  priority: z.boolean().optional().openapi({ description: "Default false" }),
};

export const CreateVariableSet = z
  .strictObject({ name: VariableSetName, ...fields })
  .openapi("CreateVariableSet");

export const UpdateVariableSet = z
  .strictObject({ name: VariableSetName.optional(), ...fields })
  .refine((body) => Object.keys(body).length > 0, "name at least one field to change")
  .openapi("UpdateVariableSet");

export const SetParams = z.strictObject({ varsetId: VariableSetRef });
export const SetVariableParams = SetParams.extend({ key: Key });
export const SetProjectParams = SetParams.extend({
  projectId: ProjectRef.openapi({ param: { name: "projectId", in: "path" } }),
});
export const SetWorkspaceParams = SetParams.extend({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
