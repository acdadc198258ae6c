export interface Entrypoint {
  subpath: string;
  source: string;
}
export declare const entrypoints: Entrypoint[];
export declare function outName(subpath: string): string;
