/** How pool service refusals look at the HTTP edge. */
import { ApiError } from "../errors.ts";
import type { PoolFailure } from "./service.ts";

/** Maps a service refusal to the HTTP error. */
export function poolError(failure: PoolFailure, what: string): ApiError {
  switch (failure.reason) {
    case "not_found":
      return new ApiError("NOT_FOUND", `${what} not found`);
    case "invalid":
      return new ApiError("BAD_REQUEST", failure.message);
    case "name_taken":
      return new ApiError("CONFLICT", `a pool named ${JSON.stringify(failure.name)} exists`);
    case "in_use":
      return new ApiError(
        "CONFLICT",
        `the pool is assigned to ${failure.workspaces.map((w) => w.name).join(", ")}; assign them another pool first`,
        { details: { workspaces: failure.workspaces } },
      );
  }
}
