/**
 * Builds the Hono app: middleware order (request id → deps → body limits), feature mounts, the
 * OpenAPI document with `/healthz` (`openapi.ts`), and the one error handler.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { requestId } from "hono/request-id";
import { releaseRoutes } from "./agents/release-routes.ts";
import { agentRoutes } from "./agents/routes.ts";
import { assessmentRoutes } from "./assessments/routes.ts";
import { auditRoutes } from "./audit/routes.ts";
import { configurationVersionRoutes } from "./configuration-versions/routes.ts";
import { buildDeps, type Clock } from "./deps.ts";
import type { AppEnv } from "./env.ts";
import { ApiError, errorResponse, handleError } from "./errors.ts";
import { flushAfterChanges } from "./events/http.ts";
import { metricsRoutes } from "./metrics/routes.ts";
import { agentVersionHeader } from "./middleware/agent-version.ts";
import { limitJsonBodies } from "./middleware/body-limit.ts";
import { notificationRoutes } from "./notifications/routes.ts";
import { exchangeRoutes } from "./oidc/exchange-routes.ts";
import { issuerRoutes } from "./oidc/issuer-routes.ts";
import { mountOpenApi } from "./openapi.ts";
import { bootstrapRoutes, organizationRoutes } from "./orgs/routes.ts";
import { poolRoutes } from "./pools/routes.ts";
import { projectRoutes } from "./projects/routes.ts";
import { projectTeamAccessRoutes } from "./projects/team-access-routes.ts";
import { runTriggerRoutes } from "./run-triggers/routes.ts";
import { jobDataRoutes } from "./runs/agent-routes.ts";
import { runRoutes } from "./runs/routes.ts";
import { scheduleRoutes } from "./schedules/routes.ts";
import { logoutRoutes } from "./sessions/routes.ts";
import { authRoutes } from "./sso/auth-routes.tsx";
import { ssoRoutes } from "./sso/routes.ts";
import { stateApiRoutes } from "./state/api-routes.ts";
import { stateRoutes } from "./state/routes.ts";
import { teamAccessRoutes } from "./teams/access-routes.ts";
import { teamRoutes } from "./teams/routes.ts";
import { teamTokenRoutes } from "./teams/token-routes.ts";
import { terraformDiscoveryRoutes } from "./tfe/discovery.ts";
import { terraformLoginRoutes } from "./tfe/login-routes.ts";
import { tfeRoutes } from "./tfe/routes.ts";
import { tokenRoutes } from "./tokens/routes.ts";
import { uiRoutes } from "./ui/routes.tsx";
import { userRoutes } from "./users/routes.ts";
import { effectiveVariableRoutes } from "./variables/effective-routes.ts";
import { variableRoutes } from "./variables/routes.ts";
import { variableSetRoutes } from "./varsets/routes.ts";
import { variableSetVariableRoutes } from "./varsets/variable-routes.ts";
import { vcsHookRoutes } from "./vcs/routes.ts";
import { webhookRoutes } from "./vcs/webhook-routes.ts";
import { agentFeedbackRoutes } from "./vcs-feedback/agent-routes.ts";
import { workspaceRoutes } from "./workspaces/routes.ts";

/** A fresh app whose requests read the time from `clock`; the Worker builds one per isolate. */
export function newApp(clock: Clock): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.use("*", requestId({ headerName: "Outpost-Request-Id" }));
  app.use("*", async function dependencies(c, next) {
    const deps = buildDeps(c.env, clock);
    c.set("deps", deps);
    c.set("db", deps.db);
    await next();
  });
  app.use("*", flushAfterChanges());
  app.use("/api/*", limitJsonBodies());
  app.use("/agent/*", limitJsonBodies());
  app.use("/auth/*", limitJsonBodies());
  app.use("/agent/v1/*", agentVersionHeader());

  app.route("/api/v1/bootstrap", bootstrapRoutes);
  app.route("/api/v1/organization/sso", ssoRoutes);
  app.route("/api/v1", organizationRoutes);
  app.route("/api/v1", userRoutes);
  app.route("/api/v1/teams", teamRoutes);
  app.route("/api/v1/teams", teamTokenRoutes);
  app.route("/api/v1/workspaces", teamAccessRoutes);
  app.route("/api/v1/projects", projectRoutes);
  app.route("/api/v1/projects", projectTeamAccessRoutes);
  app.route("/api/v1/variable-sets", variableSetRoutes);
  app.route("/api/v1/variable-sets", variableSetVariableRoutes);
  // Sign-in and sign-out of browsers and the CLI: outside /api (redirects, cookies, no token).
  app.route("/auth", authRoutes);
  app.route("/auth", logoutRoutes);
  app.route("/auth", terraformLoginRoutes);
  app.route("/api/v1/tokens", tokenRoutes);
  app.route("/api/v1/audit-events", auditRoutes);
  app.route("/api/v1/workspaces", workspaceRoutes);
  app.route("/api/v1/workspaces", variableRoutes);
  app.route("/api/v1/workspaces", effectiveVariableRoutes);
  app.route("/api/v1/workspaces", configurationVersionRoutes);
  app.route("/api/v1/workspaces", stateApiRoutes);
  app.route("/api/v1/workspaces", scheduleRoutes);
  app.route("/api/v1/workspaces", assessmentRoutes);
  // The Terraform http backend: outside /api (own auth scheme, custom methods, large bodies).
  app.route("/state/v1", stateRoutes);
  app.route("/api/v1/pools", poolRoutes);
  app.route("/agent/v1", releaseRoutes);
  app.route("/agent/v1", agentRoutes);
  app.route("/agent/v1", exchangeRoutes);
  // The workload identity issuer: public, where clouds look for it.
  app.route("/.well-known", issuerRoutes);
  // Terraform's service discovery and the TFE API subset the CLI's `cloud` block and the `tfe`
  // provider use (docs/terraform-cli.md).
  app.route("/.well-known", terraformDiscoveryRoutes);
  app.route("/api/v2", tfeRoutes);
  // Where `terraform login` sends a browser on a host without login.v1: the token page.
  app.get("/app/settings/tokens", (c) => c.redirect("/ui/terraform-token", 303));
  app.route("/api/v1", runRoutes);
  app.route("/api/v1", notificationRoutes);
  app.route("/api/v1", runTriggerRoutes);
  app.route("/agent/v1", jobDataRoutes);
  app.route("/agent/v1", agentFeedbackRoutes);
  app.route("/", uiRoutes);
  app.route("/api/v1/vcs-hooks", vcsHookRoutes);
  // Prometheus' usual path, outside /api.
  app.route("/metrics", metricsRoutes);
  // VCS webhooks: outside /api (no org token; the signature is the auth; own body limit).
  app.route("/webhooks", webhookRoutes);

  mountOpenApi(app);

  app.notFound((c) =>
    errorResponse(c, new ApiError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`)),
  );
  app.onError(handleError);
  return app;
}
