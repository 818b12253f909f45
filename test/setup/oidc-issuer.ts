/**
 * Vitest global setup for the Worker projects: a loopback OIDC issuer host (discovery and JWKS
 * on 127.0.0.1) that tests inside workerd reach with fetch, as the coordinator reaches a real
 * issuer. Tests publish their own keys to it (`PUT /<name>/jwks`); its URL is `inject("oidcIssuerUrl")`.
 */
import type { TestProject } from "vitest/node";
import { OidcIssuerServer } from "../node/helpers/oidc-issuer.ts";

declare module "vitest" {
  export interface ProvidedContext {
    oidcIssuerUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = new OidcIssuerServer();
  await server.start();
  project.provide("oidcIssuerUrl", server.url);
  return () => server.stop();
}
