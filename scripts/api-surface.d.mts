export declare const surfaceFile: string;
export declare function apiSurface(): string;
