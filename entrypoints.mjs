// The one list of public entry points. package.json "exports", the tsup build and the typedoc
// reference all follow it; test/entrypoints.test.ts fails when they drift.
// A subpath "chat-gateway/X" is built from "adapters/X/index.ts", except the protocol module, which
// is the core's own src/protocol (the gateway validates with it; clients import it alone), and the
// storage author's kit, the core's own src/storage (defineStorage and the search helpers).
// adapters/http has no entry of its own: it is the HTTP side that login, devices, hooks, media/http,
// cli and the ask action of doors are cut from, each entry named for what a user does with it.
export const entrypoints = [
  { subpath: ".", source: "src/index.ts" },
  { subpath: "./ws", source: "adapters/ws/index.ts" },
  { subpath: "./storage/memory", source: "adapters/storage/memory/index.ts" },
  { subpath: "./storage/sqljs", source: "adapters/storage/sqljs/index.ts" },
  { subpath: "./runtime/demo", source: "adapters/runtime/demo/index.ts" },
  { subpath: "./login", source: "adapters/login/index.ts" },
  { subpath: "./devices", source: "adapters/devices/index.ts" },
  { subpath: "./hooks", source: "adapters/hooks/index.ts" },
  { subpath: "./media/http", source: "adapters/media/http/index.ts" },
  { subpath: "./cli", source: "adapters/cli/index.ts" },
  { subpath: "./push/ntfy", source: "adapters/push/ntfy/index.ts" },
  { subpath: "./push/fcm", source: "adapters/push/fcm/index.ts" },
  { subpath: "./push/webpush", source: "adapters/push/webpush/index.ts" },
  { subpath: "./media/fs", source: "adapters/media/fs/index.ts" },
  { subpath: "./media/memory", source: "adapters/media/memory/index.ts" },
  { subpath: "./runtime/openai-compatible", source: "adapters/runtime/openai-compatible/index.ts" },
  { subpath: "./runtime/ai-sdk", source: "adapters/runtime/ai-sdk/index.ts" },
  { subpath: "./protocol", source: "src/protocol/index.ts" },
  { subpath: "./storage", source: "src/storage/index.ts" },
  { subpath: "./client", source: "adapters/client/index.ts" },
  { subpath: "./storage/postgres", source: "adapters/storage/postgres/index.ts" },
  { subpath: "./bus/redis", source: "adapters/bus/redis/index.ts" },
  { subpath: "./redis", source: "adapters/redis/index.ts" },
  { subpath: "./testing", source: "adapters/testing/index.ts" },
  { subpath: "./metrics", source: "adapters/metrics/index.ts" },
  { subpath: "./doors", source: "adapters/doors/index.ts" },
  { subpath: "./mcp", source: "adapters/mcp/index.ts" },
  { subpath: "./acp", source: "adapters/acp/index.ts" },
];

/** "./storage/memory" -> "storage/memory", "." -> "index" */
export function outName(subpath) {
  return subpath === "." ? "index" : subpath.slice(2);
}
