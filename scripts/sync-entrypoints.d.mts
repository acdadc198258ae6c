import type { Entrypoint } from "../entrypoints.mjs";
export declare function exportsFor(list: Entrypoint[]): Record<string, unknown>;
