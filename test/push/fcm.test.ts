import { generateKeyPairSync, verify, type KeyObject } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { PushSendError, type Device, type PushMessage } from "chat-gateway";
import { fcmPushSender, type FcmPushSenderOptions } from "chat-gateway/push/fcm";
import {
  recordingServer,
  refusedUrl,
  type RecordedRequest,
  type RecordingServer,
  type ScriptedResponse,
} from "./recording-server.js";

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
const SEND_PATH = "/v1/projects/demo-project/messages:send";

function device(extra: Partial<Device> = {}): Device {
  return {
    device_id: "phone-1",
    device_name: "Phone",
    caps: { min_protocol: 1, media: true, push: "fcm", streaming: true },
    fcm_token: "fcm-registration-token",
    last_seen: 0,
    ...extra,
  };
}

const reply: PushMessage = {
  kind: "message",
  title: "Assistant",
  body: "Done ✅",
  chat_id: "c1",
  thread_id: "t1",
  message_id: "m1",
};

function decodePart(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>;
}

/** Checks a JWT the way Google's token endpoint does; returns why it is bad, or undefined. */
function jwtProblem(jwt: string, key: KeyObject, expected: { aud: string; nowS: number }): string | undefined {
  const [header, payload, signature] = jwt.split(".");
  if (!verify("RSA-SHA256", Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, "base64url"))) {
    return "bad signature";
  }
  const h = decodePart(header);
  const c = decodePart(payload);
  if (h.alg !== "RS256") return `alg ${String(h.alg)}`;
  if (c.iss !== "push@demo-project.iam.gserviceaccount.com") return `iss ${String(c.iss)}`;
  if (c.scope !== SCOPE) return `scope ${String(c.scope)}`;
  if (c.aud !== expected.aud) return `aud ${String(c.aud)}`;
  if (c.iat !== expected.nowS) return `iat ${String(c.iat)} (now ${expected.nowS})`;
  if (c.exp !== expected.nowS + 3600) return `exp ${String(c.exp)}`;
  return undefined;
}

interface FakeGoogle {
  server: RecordingServer;
  tokenRequests(): RecordedRequest[];
  sendRequests(): RecordedRequest[];
  /** Answers for the next sends, in order; after them, 200. */
  sendAnswers: ScriptedResponse[];
  /** Resolved before each token answer; replace it to hold token requests back. */
  tokenGate: Promise<void>;
  tokenAnswer?: ScriptedResponse;
  expiresIn: number;
  now: number;
  sender(options?: Partial<FcmPushSenderOptions>): ReturnType<typeof fcmPushSender>;
}

let server: RecordingServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function fakeGoogle(): Promise<FakeGoogle> {
  const issued = new Set<string>();
  let tokenCount = 0;
  const fake: FakeGoogle = {
    server: undefined as unknown as RecordingServer,
    tokenRequests: () => fake.server.requests.filter((r) => r.url === "/token"),
    sendRequests: () => fake.server.requests.filter((r) => r.url === SEND_PATH),
    sendAnswers: [],
    tokenGate: Promise.resolve(),
    expiresIn: 3600,
    now: Date.parse("2026-03-01T12:00:00.250Z"),
    sender: (options = {}) =>
      fcmPushSender({
        serviceAccount: {
          project_id: "demo-project",
          client_email: "push@demo-project.iam.gserviceaccount.com",
          private_key: PRIVATE_PEM,
          token_uri: `${fake.server.url}/token`,
        },
        apiBaseUrl: fake.server.url,
        clock: () => fake.now,
        ...options,
      }),
  };
  fake.server = server = await recordingServer(async (request) => {
    if (request.url === "/token") {
      await fake.tokenGate;
      if (fake.tokenAnswer) return fake.tokenAnswer;
      const form = new URLSearchParams(request.body);
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return { status: 400, json: { error: "unsupported_grant_type" } };
      }
      const problem = jwtProblem(form.get("assertion") ?? "", publicKey, {
        aud: `${fake.server.url}/token`,
        nowS: Math.floor(fake.now / 1000),
      });
      if (problem) return { status: 400, json: { error: "invalid_grant", error_description: problem } };
      const token = `access-${++tokenCount}`;
      issued.add(token);
      return { json: { access_token: token, expires_in: fake.expiresIn, token_type: "Bearer" } };
    }
    if (request.method === "POST" && request.url === SEND_PATH) {
      const scripted = fake.sendAnswers.shift();
      if (scripted) return scripted;
      const token = request.headers.authorization?.replace(/^Bearer /, "") ?? "";
      if (!issued.has(token)) return { status: 401, json: { error: { code: 401, status: "UNAUTHENTICATED" } } };
      return { json: { name: "projects/demo-project/messages/0:1" } };
    }
    return { status: 404, text: "no such path" };
  });
  return fake;
}

function unregistered(): ScriptedResponse {
  return {
    status: 404,
    json: {
      error: {
        code: 404,
        message: "Requested entity was not found.",
        status: "NOT_FOUND",
        details: [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: "UNREGISTERED" }],
      },
    },
  };
}

const bearer = (r: RecordedRequest) => r.headers.authorization;

describe("fcmPushSender", () => {
  it("accepts - only devices with an FCM token", async () => {
    const google = await fakeGoogle();
    const push = google.sender();
    expect(push.name).toBe("fcm");
    expect(push.accepts(device())).toBe(true);
    expect(push.accepts(device({ fcm_token: undefined, ntfy_topic: "t" }))).toBe(false);
    expect(push.accepts(device({ fcm_token: "" }))).toBe(false);
  });

  it("send - exchanges a signed JWT for a token, then posts an HTTP v1 message with it", async () => {
    const google = await fakeGoogle();
    await google.sender().send("alice", device(), reply);
    const [tokenRequest] = google.tokenRequests();
    expect(tokenRequest.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(google.tokenRequests()).toHaveLength(1);
    const [send] = google.sendRequests();
    expect(bearer(send)).toBe("Bearer access-1");
    expect(send.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(send.body)).toEqual({
      message: {
        token: "fcm-registration-token",
        notification: { title: "Assistant", body: "Done ✅" },
        data: { kind: "message", chat_id: "c1", thread_id: "t1", message_id: "m1" },
        android: { priority: "high" },
      },
    });
  });

  it("send - data carries only string values; absent ids and a null thread are left out", async () => {
    const google = await fakeGoogle();
    await google.sender().send("alice", device(), {
      kind: "notification",
      notification_kind: "approval",
      title: "Approve?",
      body: "deploy",
      chat_id: "c1",
      thread_id: null,
    });
    expect(JSON.parse(google.sendRequests()[0].body).message.data).toEqual({
      kind: "notification",
      chat_id: "c1",
      notification_kind: "approval",
    });
  });

  it("token - a rejected JWT is a PushSendError naming the OAuth error", async () => {
    const google = await fakeGoogle();
    const { privateKey: otherKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const push = google.sender({
      serviceAccount: {
        project_id: "demo-project",
        client_email: "push@demo-project.iam.gserviceaccount.com",
        private_key: otherKey.export({ type: "pkcs8", format: "pem" }) as string,
        token_uri: `${google.server.url}/token`,
      },
    });
    const error = await push.send("alice", device(), reply).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect((error as Error).message).toMatch(/invalid_grant: bad signature/);
    expect(google.sendRequests()).toHaveLength(0);
  });

  it("token - reused across sends until shortly before it expires, then fetched anew", async () => {
    const google = await fakeGoogle();
    const push = google.sender();
    await push.send("alice", device(), reply);
    google.now += 50 * 60 * 1000;
    await push.send("alice", device(), reply);
    expect(google.tokenRequests()).toHaveLength(1);
    google.now += 9 * 60 * 1000 + 30 * 1000; // 30 s before expiry: inside the safety margin
    await push.send("alice", device(), reply);
    expect(google.tokenRequests()).toHaveLength(2);
    expect(google.sendRequests().map(bearer)).toEqual(["Bearer access-1", "Bearer access-1", "Bearer access-2"]);
  });

  it("token - a short expires_in is honoured", async () => {
    const google = await fakeGoogle();
    google.expiresIn = 120;
    const push = google.sender();
    await push.send("alice", device(), reply);
    google.now += 2 * 60 * 1000;
    await push.send("alice", device(), reply);
    expect(google.sendRequests().map(bearer)).toEqual(["Bearer access-1", "Bearer access-2"]);
  });

  it("token - concurrent sends share one token request", async () => {
    const google = await fakeGoogle();
    let open!: () => void;
    google.tokenGate = new Promise<void>((resolve) => (open = resolve));
    const push = google.sender();
    const sends = Array.from({ length: 5 }, (_, i) => push.send("alice", device({ fcm_token: `t${i}` }), reply));
    await new Promise((resolve) => setTimeout(resolve, 50));
    open();
    await Promise.all(sends);
    expect(google.tokenRequests()).toHaveLength(1);
    expect(google.sendRequests().map(bearer)).toEqual(Array(5).fill("Bearer access-1"));
  });

  it("token - a failed token request is not cached; the next send asks again", async () => {
    const google = await fakeGoogle();
    google.tokenAnswer = { status: 503, text: "unavailable" };
    const push = google.sender();
    await expect(push.send("alice", device(), reply)).rejects.toMatchObject({
      name: "PushSendError",
      permanent: false,
    });
    google.tokenAnswer = undefined;
    await push.send("alice", device(), reply);
    expect(google.tokenRequests()).toHaveLength(2);
    expect(google.sendRequests().map(bearer)).toEqual(["Bearer access-1"]);
  });

  it("401 - refreshes the token once and retries the send", async () => {
    const google = await fakeGoogle();
    const push = google.sender();
    await push.send("alice", device(), reply);
    google.sendAnswers.push({ status: 401, json: { error: { code: 401, status: "UNAUTHENTICATED" } } });
    await push.send("alice", device(), reply);
    expect(google.tokenRequests()).toHaveLength(2);
    expect(google.sendRequests().map(bearer)).toEqual(["Bearer access-1", "Bearer access-1", "Bearer access-2"]);
    expect(google.sendRequests()[2].body).toBe(google.sendRequests()[1].body);
  });

  it("401 - a second 401 is a permanent failure, without a third attempt", async () => {
    const google = await fakeGoogle();
    const denied = { status: 401, json: { error: { code: 401, message: "Auth error", status: "UNAUTHENTICATED" } } };
    google.sendAnswers.push(denied, denied);
    const error = await google
      .sender()
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent: true });
    expect(google.sendRequests()).toHaveLength(2);
  });

  it("errors - an UNREGISTERED device token is a permanent failure", async () => {
    const google = await fakeGoogle();
    google.sendAnswers.push(unregistered());
    const error = await google
      .sender()
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent: true });
    expect((error as Error).message).toContain("UNREGISTERED");
    expect(google.sendRequests()).toHaveLength(1);
  });

  it("errors - UNREGISTERED is permanent whatever the status", async () => {
    const google = await fakeGoogle();
    const answer = unregistered();
    answer.status = 500;
    google.sendAnswers.push(answer);
    await expect(google.sender().send("alice", device(), reply)).rejects.toMatchObject({ permanent: true });
  });

  it.each([
    [400, "INVALID_ARGUMENT", true],
    [403, "SENDER_ID_MISMATCH", true],
    [429, "QUOTA_EXCEEDED", false],
    [500, "INTERNAL", false],
    [503, "UNAVAILABLE", false],
  ])("errors - %i %s rejects with PushSendError, permanent %s", async (status, code, permanent) => {
    const google = await fakeGoogle();
    google.sendAnswers.push({
      status,
      json: { error: { code: status, message: "nope", details: [{ errorCode: code }] } },
    });
    const error = await google
      .sender()
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent });
    expect((error as Error).message).toContain(code);
  });

  it("errors - an unreachable FCM is a non-permanent PushSendError", async () => {
    const google = await fakeGoogle();
    const error = await google
      .sender({ apiBaseUrl: await refusedUrl() })
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent: false });
  });

  it("options - misconfiguration is a TypeError at construction", () => {
    const account = { project_id: "p", client_email: "e@p", private_key: PRIVATE_PEM };
    expect(() => fcmPushSender(undefined as never)).toThrow(TypeError);
    expect(() => fcmPushSender({ serviceAccount: { ...account, project_id: "" } })).toThrow(/project_id/);
    expect(() => fcmPushSender({ serviceAccount: { ...account, client_email: undefined as never } })).toThrow(
      /client_email/,
    );
    expect(() => fcmPushSender({ serviceAccount: { ...account, private_key: "not a key" } })).toThrow(
      /PEM private key/,
    );
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    }) as string;
    expect(() => fcmPushSender({ serviceAccount: { ...account, private_key: ec } })).toThrow(/RSA/);
    expect(() => fcmPushSender({ serviceAccount: account, apiBaseUrl: "nope" })).toThrow(/apiBaseUrl/);
    expect(() => fcmPushSender({ serviceAccount: account, tokenUrl: "file:///etc/token" })).toThrow(/tokenUrl/);
    for (const project_id of ["..", ".", "a/b", "../x", "p?x=1", "p q", "x".repeat(101)]) {
      expect(() => fcmPushSender({ serviceAccount: { ...account, project_id } }), project_id).toThrow(/project_id/);
    }
    expect(() =>
      fcmPushSender({ serviceAccount: { ...account, project_id: "example.com:my-project_1" } }),
    ).not.toThrow();
  });

  it("send - a stored token outside the grammar is a permanent PushSendError and nothing is sent", async () => {
    const google = await fakeGoogle();
    const push = google.sender();
    for (const fcm_token of ["a b", "x".repeat(4097), "tok\nen"]) {
      const error = await push.send("alice", device({ fcm_token }), reply).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PushSendError);
      expect((error as PushSendError).permanent).toBe(true);
      expect((error as Error).message).toContain("invalid fcm_token");
    }
    expect(google.server.requests).toEqual([]);
  });

  it("options - a private key with escaped newlines, as pasted into an environment variable, works", async () => {
    const google = await fakeGoogle();
    const push = google.sender({
      serviceAccount: {
        project_id: "demo-project",
        client_email: "push@demo-project.iam.gserviceaccount.com",
        private_key: PRIVATE_PEM.replace(/\n/g, "\\n"),
        token_uri: `${google.server.url}/token`,
      },
    });
    await push.send("alice", device(), reply);
    expect(google.sendRequests()).toHaveLength(1);
  });
});
