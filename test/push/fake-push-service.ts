/**
 * A stand-in for a browser's push service (RFC 8030) on https://127.0.0.1 with a certificate made
 * here, and the browser's side of a subscription: its keys, and the RFC 8291 decryption a
 * browser does, written out with node:crypto so that the test checks the sender's encryption
 * independently of the `web-push` package that did it. Also checks the VAPID JWT (RFC 8292).
 * @module
 */
import { createDecipheriv, createECDH, createHmac, createPublicKey, randomBytes, verify, type ECDH } from "node:crypto";
import { Agent, createServer, type Server } from "node:https";
import type { IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { selfSignedCertificate } from "../fixtures/certificate.js";

/** One POST as the push service received it. */
export interface PushRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface FakePushService {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: PushRequest[];
  /** An agent that trusts this service's certificate (and nothing else). */
  readonly agent: Agent;
  /** The certificate, PEM, for a browser or a process to trust. */
  readonly certPem: string;
  /** The status answered to a path (default 201). */
  answer(path: string, status: number): void;
  close(): Promise<void>;
}

export async function fakePushService(): Promise<FakePushService> {
  const { key, cert } = selfSignedCertificate();
  const requests: PushRequest[] = [];
  const statuses = new Map<string, number>();
  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = req.url ?? "";
      requests.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(statuses.get(path) ?? 201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const agent = new Agent({ ca: cert });
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    agent,
    certPem: cert,
    answer: (path, status) => void statuses.set(path, status),
    close: () => {
      agent.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The browser's side of a subscription. */
export interface Subscriber {
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
  /** The plaintext of an `aes128gcm` push body (RFC 8188 with RFC 8291 keys). */
  decrypt(body: Buffer): string;
}

const hmac = (key: Buffer, data: Buffer) => createHmac("sha256", key).update(data).digest();

export function subscriber(endpoint: string): Subscriber {
  const ecdh: ECDH = createECDH("prime256v1");
  const uaPublic = ecdh.generateKeys();
  const auth = randomBytes(16);
  return {
    subscription: { endpoint, keys: { p256dh: uaPublic.toString("base64url"), auth: auth.toString("base64url") } },
    decrypt(body) {
      const salt = body.subarray(0, 16);
      const idLength = body[20];
      const asPublic = body.subarray(21, 21 + idLength);
      const ciphertext = body.subarray(21 + idLength);
      const secret = ecdh.computeSecret(asPublic);
      const prkKey = hmac(auth, secret);
      const ikm = hmac(prkKey, Buffer.concat([Buffer.from("WebPush: info\0"), uaPublic, asPublic, Buffer.from([1])]));
      const prk = hmac(salt, ikm);
      const cek = hmac(prk, Buffer.from("Content-Encoding: aes128gcm\0\x01")).subarray(0, 16);
      const nonce = hmac(prk, Buffer.from("Content-Encoding: nonce\0\x01")).subarray(0, 12);
      const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
      decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
      const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
      // The last record ends with the delimiter 0x02, then zero padding.
      let end = padded.length - 1;
      while (end > 0 && padded[end] === 0) end--;
      if (padded[end] !== 2) throw new Error("no last-record delimiter");
      return padded.subarray(0, end).toString("utf8");
    },
  };
}

/** The claims of a request's VAPID JWT (`Authorization: vapid t=…, k=…`), after checking its ES256 signature against `k`. */
export function vapidClaims(headers: IncomingHttpHeaders): { aud: string; sub: string; exp: number; k: string } {
  const match = /^vapid t=([^,]+), k=(.+)$/.exec(headers.authorization ?? "");
  if (!match) throw new Error(`no VAPID authorization: ${headers.authorization}`);
  const [header, claims, signature] = match[1].split(".");
  const point = Buffer.from(match[2], "base64url");
  const key = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33).toString("base64url"),
    },
    format: "jwk",
  });
  const ok = verify(
    "sha256",
    Buffer.from(`${header}.${claims}`),
    { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(signature, "base64url"),
  );
  if (!ok) throw new Error("VAPID signature does not verify");
  return { ...JSON.parse(Buffer.from(claims, "base64url").toString("utf8")), k: match[2] };
}
