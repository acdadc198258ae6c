import type { Plugin } from "esbuild";

/** Each optional peer: who needs it (for the message) and the names our sources import from it. */
export declare const optionalPeers: Record<string, { neededBy: string; names: string[] }>;
/** The optional peers as tsup `noExternal` patterns, so the guard below sees their imports. */
export declare const guardedPeers: RegExp[];
/** esbuild plugin: an optional peer is loaded through a guard that names it when it is missing. */
export declare function optionalPeerGuard(): Plugin;
