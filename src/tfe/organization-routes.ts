/**
 * `/api/v2/organizations/{name}` and its `entitlement-set`: what `terraform init` reads first to
 * learn that the organization exists and whether it runs operations remotely
 * (`internal/cloud/backend.go`, `Organizations.ReadEntitlements`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { decideOrganization } from "../authz/model.ts";
import { requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { documentResponse, errorDocuments, sendDocument } from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

export const OrgParams = z.strictObject({
  organization: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "organization", in: "path" }, example: "acme" }),
});

/**
 * What Outpost offers, in Terraform Cloud's entitlement names. `operations` is true: a workspace
 * in agent mode runs on the organization's agents; a local one runs on the caller's machine and
 * keeps its state here.
 */
export const ENTITLEMENTS = {
  agents: true,
  "audit-logging": true,
  "configuration-designer": false,
  "cost-estimation": false,
  operations: true,
  "private-module-registry": false,
  "run-tasks": false,
  sentinel: false,
  "policy-enforcement": false,
  sso: true,
  "state-storage": true,
  teams: true,
  "vcs-integrations": true,
} as const;

export const organizationRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadOrganization",
      path: "/organizations/{organization}",
      tags,
      summary: "The caller's organization, by name (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: OrgParams },
      responses: {
        200: documentResponse("The organization"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const allowed = (action: "workspace.create" | "teams.manage") =>
        decideOrganization(principal.role, action) === "allow";
      return sendDocument(c, {
        data: {
          id: organization.name,
          type: "organizations",
          attributes: {
            name: organization.name,
            "external-id": organization.id,
            "created-at": new Date(organization.createdAt).toISOString(),
            "cost-estimation-enabled": false,
            "default-execution-mode": "local",
            permissions: {
              "can-create-workspace": allowed("workspace.create"),
              "can-manage-teams": allowed("teams.manage"),
              "can-update": allowed("teams.manage"),
            },
          },
          relationships: {},
        },
      });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadEntitlements",
      path: "/organizations/{organization}/entitlement-set",
      tags,
      summary: "What the organization may use, in Terraform Cloud's entitlement names (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: OrgParams },
      responses: {
        200: documentResponse("The entitlement set"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { organization } = await organizationOf(c, c.req.valid("param").organization);
      return sendDocument(c, {
        data: { id: organization.name, type: "entitlement-sets", attributes: { ...ENTITLEMENTS } },
      });
    },
  );
