import { ExitRequest } from "../errors.ts";
import { EXIT_CODES } from "../exit-codes.ts";

/**
 * The agent token was not accepted: revoked, unknown (its pool was deleted), or for an OIDC
 * agent, no new one could be had. The process must stop with {@link EXIT_CODES.tokenRevoked}.
 */
export class TokenRejected extends ExitRequest {
  override name = "TokenRejected";
  constructor(message: string) {
    super(message, EXIT_CODES.tokenRevoked);
  }
}
