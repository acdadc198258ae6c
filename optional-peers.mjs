// The optional peer packages and the esbuild plugin that guards their import. Without a guard a
// missing peer fails deep in Node's resolver ("Cannot find package 'pg' imported from …/dist/…");
// with it, importing the entry throws one error that names the package and the command to install
// it, in the ESM and the CommonJS build alike. Everything else (ws, sql.js, bcryptjs, @noble/hashes)
// is a dependency, so the default path needs one `npm install chat-gateway`.

/**
 * Each optional peer: who needs it (for the message) and the names our sources import from it.
 * esbuild fails the build when a source imports a name missing here, so the list cannot go stale.
 */
export const optionalPeers = {
  pg: { neededBy: "chat-gateway/storage/postgres", names: ["default"] },
  jose: { neededBy: "chat-gateway/push/fcm", names: ["SignJWT"] },
  "web-push": { neededBy: "chat-gateway/push/webpush", names: ["default"] },
  "prom-client": {
    neededBy: "chat-gateway/metrics",
    names: ["collectDefaultMetrics", "Counter", "Gauge", "Histogram", "Registry"],
  },
  ai: {
    neededBy: "chat-gateway/runtime/ai-sdk",
    names: ["createUIMessageStream", "generateText", "pipeUIMessageStreamToResponse", "stepCountIs", "streamText"],
  },
  ioredis: { neededBy: "chat-gateway --redis-url", names: ["Redis"] },
  vitest: {
    neededBy: "chat-gateway/testing",
    names: ["afterEach", "beforeEach", "describe", "expect", "it", "test"],
  },
};

/** tsup externalizes peers before any plugin of ours sees them; these names skip that. */
export const guardedPeers = Object.keys(optionalPeers).map((name) => new RegExp(`^${name}$`));

const namespace = "chat-gateway-optional-peer";

/** Source of the error factory, inlined into each guard module (no shared chunk to resolve). */
function missingPeerSource(name) {
  const { neededBy } = optionalPeers[name];
  const message = `${neededBy} needs the package \`${name}\`: npm install ${name}`;
  // Only "this very package is not installed" becomes the clear error; a peer that is installed but
  // fails to load (or misses a dependency of its own) keeps its own error.
  return `function missingPeer(error) {
  const notFound = error && (error.code === "ERR_MODULE_NOT_FOUND" || error.code === "MODULE_NOT_FOUND");
  if (!notFound || !String(error.message).includes("'${name}'")) return error;
  return Object.assign(new Error(${JSON.stringify(message)}, { cause: error }), { code: "ERR_CHAT_GATEWAY_MISSING_PEER" });
}
`;
}

function esmGuard(name) {
  const exports = optionalPeers[name].names.map((n) =>
    n === "default" ? "export default peer.default;" : `export const ${n} = peer.${n};`,
  );
  return `${missingPeerSource(name)}let peer;
try { peer = await import(${JSON.stringify(name)}); } catch (error) { throw missingPeer(error); }
${exports.join("\n")}
`;
}

function cjsGuard(name) {
  return `${missingPeerSource(name)}try { module.exports = require(${JSON.stringify(name)}); } catch (error) { throw missingPeer(error); }
`;
}

/** esbuild plugin: `import … from "pg"` in our sources loads "pg" through the guard above. */
export function optionalPeerGuard() {
  return {
    name: "optional-peer-guard",
    setup(build) {
      const format = build.initialOptions.format;
      const filter = new RegExp(`^(${Object.keys(optionalPeers).join("|")})$`);
      build.onResolve({ filter }, (args) =>
        args.namespace === namespace ? { path: args.path, external: true } : { path: args.path, namespace },
      );
      build.onLoad({ filter: /.*/, namespace }, (args) => ({
        contents: format === "cjs" ? cjsGuard(args.path) : esmGuard(args.path),
        loader: "js",
      }));
    },
  };
}
