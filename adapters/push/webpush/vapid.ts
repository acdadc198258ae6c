/**
 * The VAPID key pair of a Web Push server (RFC 8292): made once and kept, because every browser
 * subscription is bound to the public key it was made with; a new pair orphans them all.
 * @module
 */
import { generateKeyPairSync } from "node:crypto";
import { chmod, open, readFile } from "node:fs/promises";

/** A VAPID key pair, base64url: `publicKey` the uncompressed P-256 point (65 bytes), `privateKey` the scalar (32 bytes). */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

function decodes(value: unknown, bytes: number): Buffer | undefined {
  if (typeof value !== "string" || !BASE64URL.test(value)) return undefined;
  const decoded = Buffer.from(value, "base64url");
  return decoded.length === bytes ? decoded : undefined;
}

/** True for a well-formed {@link VapidKeys}. */
export function isVapidKeys(value: unknown): value is VapidKeys {
  if (typeof value !== "object" || value === null) return false;
  const { publicKey, privateKey } = value as Partial<VapidKeys>;
  return decodes(publicKey, 65)?.[0] === 4 && decodes(privateKey, 32) !== undefined;
}

/** A new VAPID key pair, from Node's own P-256 key generation. */
export function generateVapidKeys(): VapidKeys {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const jwk = privateKey.export({ format: "jwk" });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
  return { publicKey: point.toString("base64url"), privateKey: Buffer.from(jwk.d!, "base64url").toString("base64url") };
}

/**
 * The key pair kept in `path` (JSON `{publicKey, privateKey}`, mode 0600), made there on the first
 * call. Made with an exclusive create, so two processes starting at once keep one pair: the
 * second reads the first's. A file that exists but holds no valid pair is an error, never
 * replaced: replacing it would orphan every subscription.
 */
export async function fileVapidKeys(path: string): Promise<VapidKeys> {
  const made = generateVapidKeys();
  try {
    const file = await open(path, "wx", 0o600);
    try {
      await file.writeFile(`${JSON.stringify(made)}\n`);
      await file.sync();
    } finally {
      await file.close();
    }
    return made;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readKeys(path);
}

async function readKeys(path: string, attempt = 1): Promise<VapidKeys> {
  const text = await readFile(path, "utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isVapidKeys(parsed)) {
    // Kept private whoever made the file: the private key signs as this server.
    await chmod(path, 0o600).catch(() => undefined);
    return { publicKey: parsed.publicKey, privateKey: parsed.privateKey };
  }
  // Another process may be writing it this very moment.
  if (attempt < 5 && text.trim() === "") {
    await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    return readKeys(path, attempt + 1);
  }
  throw new Error(
    `${path} holds no VAPID key pair ({publicKey, privateKey}, base64url); fix or remove it (removing it orphans every browser's push subscription)`,
  );
}
