/**
 * Round three, finding 12: `ESC]0;…BEL` in a token's description or OIDC subject reached the
 * terminal through `outpost agent-tokens list`. The real CLI, against a loopback coordinator that
 * answers such a listing, prints every control character as a `\xNN` escape.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { UserApi } from "../../agent/src/cli/api.ts";
import { runCli } from "../../agent/src/cli/main.ts";

const HOSTILE = "ci\u001b]0;pwned\u0007\u001b[2J\r\u009b";
let server: Server | null = null;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** A coordinator whose pool lists one token with control characters in every text field. */
async function coordinator(): Promise<string> {
  const listening = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        tokens: [
          {
            id: "atok_x",
            description: `OIDC: ${HOSTILE}`,
            createdAt: "2026-01-01T00:00:00.000Z",
            lastUsedAt: null,
            expiresAt: null,
            revokedAt: null,
            oidc: { trustId: "trust_x", issuer: "https://i", subject: HOSTILE, chainId: "c" },
          },
        ],
      }),
    );
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

describe("outpost agent-tokens list", () => {
  it("escapes control characters from the coordinator instead of writing them to the terminal", async () => {
    const address = await coordinator();
    let out = "";
    let err = "";
    const code = await runCli(
      {
        out: { write: (chunk) => (out += String(chunk)) },
        err: { write: (chunk) => (err += chunk) },
        env: {},
        readStdin: async () => null,
        promptSecret: async () => null,
        api: async () => new UserApi({ address, token: "op_user_test" }),
        onInterrupt: () => () => {},
        exit: (n) => {
          throw new Error(`exit ${n}`);
        },
      },
      ["agent-tokens", "list", "pool_x"],
    );
    expect(code, err).toBe(0);
    expect(out).toContain("ci\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\x9b");
    expect(out).not.toMatch(/\p{Cc}(?<!\n)/u);
  });
});
