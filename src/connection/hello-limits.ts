/**
 * The `limits` object of `hello.ok` (docs/PROTOCOL.md §2): every bound a client can plan around, in
 * snake_case.
 * @module
 */
import type { ResolvedOptions } from "../options/options.js";
import { LIMITS } from "../protocol/limits.js";
import type { ServerPayloads } from "../protocol/server-frames.js";
import { ASK_LIMITS } from "../asks/ask-shapes.js";

/** `hello.ok.limits` (docs/PROTOCOL.md §2): the bounds a client can plan around. */
export function helloLimits(o: ResolvedOptions): ServerPayloads["hello.ok"]["limits"] {
  return {
    max_frame_bytes: o.maxFrameBytes,
    max_media_bytes: o.maxMediaBytes,
    history_max: LIMITS.historyMax,
    search_max: o.searchMax,
    history_max_bytes: o.historyMaxBytes,
    rate_per_second: o.rateLimit.perSecond,
    rate_burst: o.rateLimit.burst,
    uploads_in_flight: o.maxUploadsPerConnection,
    pulls_in_flight: o.maxPullsPerConnection,
    hello_timeout_ms: o.helloTimeoutMs,
    connections_per_owner: o.maxConnectionsPerOwner,
    picker_text_max: ASK_LIMITS.textMax,
  };
}
