import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** A second signing key (`OIDC_SIGNING_KEYS` format), for the rotation tests. */
      TEST_NEXT_SIGNING_KEY: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../../src/index.ts");
    }
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The loopback OIDC issuer host started by test/setup/oidc-issuer.ts. */
    oidcIssuerUrl: string;
    /** The loopback webhook receiver started by test/setup/webhook-receiver.ts. */
    webhookReceiverUrl: string;
  }
}
