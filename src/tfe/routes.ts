/**
 * `/api/v2`: the subset of Terraform Cloud's API that the Terraform CLI's `cloud` block, go-tfe
 * and the `tfe` provider use, as a thin adapter over Outpost's own services. Every answer carries
 * the API headers; every refusal is a JSON:API `errors` document; unknown paths are 404.
 */
import { ApiError } from "../errors.ts";
import { newRouter } from "../router.ts";
import { accountRoutes } from "./account-routes.ts";
import { agentPoolRoutes } from "./agent-pool-routes.ts";
import { agentTokenRoutes } from "./agent-token-routes.ts";
import { configurationVersionRoutes } from "./configuration-version-routes.ts";
import { pingRoutes, tfeApiHeaders } from "./discovery.ts";
import { jsonApiError } from "./jsonapi.ts";
import { notificationRoutes } from "./notification-routes.ts";
import { organizationRoutes } from "./organization-routes.ts";
import { planApplyRoutes } from "./plan-apply-routes.ts";
import { projectRoutes } from "./project-routes.ts";
import { runQueueRoutes } from "./run-queue-routes.ts";
import { runRoutes } from "./run-routes.ts";
import { runTriggerRoutes } from "./run-trigger-routes.ts";
import { stateVersionRoutes } from "./state-version-routes.ts";
import { tagRoutes } from "./tag-routes.ts";
import { teamAccessRoutes } from "./team-access-routes.ts";
import { teamRoutes } from "./team-routes.ts";
import { variableRoutes } from "./variable-routes.ts";
import { varsetRoutes } from "./varset-routes.ts";
import { varsetVariableRoutes } from "./varset-variable-routes.ts";
import { workspaceListRoutes } from "./workspace-list-routes.ts";
import { workspaceRoutes } from "./workspace-routes.ts";

/** Mounted at `/api/v2`. */
export const tfeRoutes = newRouter();
tfeRoutes.use("*", tfeApiHeaders());
tfeRoutes.route("/", pingRoutes);
tfeRoutes.route("/", accountRoutes);
tfeRoutes.route("/", organizationRoutes);
tfeRoutes.route("/", workspaceListRoutes);
tfeRoutes.route("/", workspaceRoutes);
tfeRoutes.route("/", stateVersionRoutes);
tfeRoutes.route("/", variableRoutes);
tfeRoutes.route("/", agentPoolRoutes);
tfeRoutes.route("/", configurationVersionRoutes);
tfeRoutes.route("/", runRoutes);
tfeRoutes.route("/", planApplyRoutes);
tfeRoutes.route("/", runQueueRoutes);
tfeRoutes.route("/", tagRoutes);
tfeRoutes.route("/", projectRoutes);
tfeRoutes.route("/", varsetRoutes);
tfeRoutes.route("/", varsetVariableRoutes);
tfeRoutes.route("/", teamRoutes);
tfeRoutes.route("/", teamAccessRoutes);
tfeRoutes.route("/", agentTokenRoutes);
tfeRoutes.route("/", runTriggerRoutes);
tfeRoutes.route("/", notificationRoutes);
tfeRoutes.all("*", (c) => {
  throw new ApiError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path} in the TFE API`);
});
tfeRoutes.onError(jsonApiError);
