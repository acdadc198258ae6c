// Random bad frames over a real socket to a real gateway (memory storage): every answer is a clear
// protocol error carrying the request's id, never `internal`, and a second owner's connection that
// is open meanwhile keeps working (docs/PROTOCOL.md "Errors").
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenAuthenticator } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { clientFrameStructs, CLOSE_CODES } from "chat-gateway/protocol";
import { memoryStorage } from "chat-gateway/storage/memory";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { Client, startGateway, type Harness } from "./harness.js";
import { badJsonTexts, hostileStrings, nestedArrays } from "../fixtures/bad-values.js";

const FRAME_TYPES = Object.keys(clientFrameStructs);
const JUNK_TYPES = [
  "toString",
  "constructor",
  "__proto__",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "picker.select",
  "commands.complete",
  "hello",
  "",
];
const FIELD_NAMES = [
  ...new Set(Object.values(clientFrameStructs).flatMap((s) => Object.keys((s as { schema: object }).schema))),
];
/** Requests that answer nothing when they succeed. */
const SILENT_ON_SUCCESS = new Set(["fcm.register", "media.upload.start"]);

/** The JSON text of a value: random JSON, known-hostile text, or a few well-formed field values. */
const jsonText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 3, arbitrary: fc.constantFrom(...badJsonTexts()) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(...hostileStrings, "default", "channel", "thread", "all", "chat", "image", "hi")
      .map((s) => JSON.stringify(s)),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.integer({ min: 1, max: 3000 }).map((n) => nestedArrays(n)),
      fc.integer({ min: 1, max: 3000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`),
    ),
  },
);

type Shape = { type: string; schema: unknown };

/**
 * JSON text that mostly fits a struct (read from the frame's own struct), with odd but well-typed
 * values and now and then a wrong one, so that frames get past validation into the handlers.
 */
function fitting(struct: Shape): fc.Arbitrary<string> {
  const wrong = { weight: 1, arbitrary: jsonText };
  const strings = fc
    .oneof(
      { weight: 2, arbitrary: fc.constant("default") },
      { weight: 3, arbitrary: fc.constantFrom(...hostileStrings, "hi", "/stop", "/help", "image/png", "#00ff00") },
    )
    .map((v) => JSON.stringify(v));
  const byType: Record<string, () => fc.Arbitrary<string>> = {
    string: () => strings,
    integer: () => fc.constantFrom("0", "1", "-1", "200", "201", "9007199254740991", "1e300", "-0"),
    boolean: () => fc.constantFrom("true", "false"),
    enums: () => fc.constantFrom(...Object.keys(struct.schema as object)).map((v) => JSON.stringify(v)),
    array: () => fc.array(fitting(struct.schema as Shape), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
    type: () => fittingObject(struct.schema as Record<string, Shape>),
  };
  const right = byType[struct.type];
  return right ? fc.oneof({ weight: 6, arbitrary: right() }, wrong) : jsonText;
}

function fittingObject(schema: Record<string, Shape>): fc.Arbitrary<string> {
  const fields = Object.entries(schema).map(([name, field]) =>
    fc.option(
      fitting(field).map((v) => `${JSON.stringify(name)}:${v}`),
      { nil: undefined, freq: 4 },
    ),
  );
  return fc.tuple(...fields).map((parts) => `{${parts.filter((p) => p !== undefined).join(",")}}`);
}

/** A payload: any JSON, an object of real and junk field names with random values, or one that mostly fits the frame type. */
function payloadText(type: string | undefined): fc.Arbitrary<string> {
  const loose = fc
    .array(
      fc.tuple(
        fc.oneof(fc.constantFrom(...FIELD_NAMES), fc.constantFrom(...JUNK_TYPES), fc.string({ maxLength: 6 })),
        jsonText,
      ),
      { maxLength: 6 },
    )
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`);
  const struct =
    type !== undefined && Object.hasOwn(clientFrameStructs, type)
      ? (clientFrameStructs as unknown as Record<string, Shape>)[type]
      : undefined;
  if (!struct) return fc.oneof(jsonText, loose);
  return fc.oneof(
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: loose },
    { weight: 4, arbitrary: fitting(struct) },
  );
}

interface TextFrame {
  kind: "text";
  /** The frame's text with `"@ID@"` standing for a unique string id. */
  template: string;
  type: string | undefined;
}
interface BinaryFrame {
  kind: "binary";
  bytes: Uint8Array;
}

const textFrame: fc.Arbitrary<TextFrame> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .oneof(
        {
          weight: 4,
          arbitrary: fc
            .constantFrom(...FRAME_TYPES, ...JUNK_TYPES)
            .map((t) => ({ text: JSON.stringify(t), type: t as string | undefined })),
        },
        { weight: 1, arbitrary: jsonText.map((text) => ({ text, type: undefined as string | undefined })) },
      )
      .chain((type) =>
        fc.record({
          type: fc.constant(type),
          id: fc.option(fc.oneof({ weight: 3, arbitrary: fc.constant('"@ID@"') }, { weight: 1, arbitrary: jsonText }), {
            nil: undefined,
          }),
          payload: fc.option(payloadText(type.type), { nil: undefined, freq: 8 }),
        }),
      )
      .map(({ type, id, payload }) => ({
        kind: "text" as const,
        type: type.type,
        template: `{"type":${type.text}${id === undefined ? "" : `,"id":${id}`}${payload === undefined ? "" : `,"payload":${payload}`}}`,
      })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(jsonText, fc.string({ maxLength: 40 }))
      .map((template) => ({ kind: "text" as const, template, type: undefined })),
  },
);

const binaryFrame: fc.Arbitrary<BinaryFrame> = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: "binary" as const, bytes })),
  fc.tuple(jsonText, fc.integer({ min: -8, max: 8 }), fc.uint8Array({ maxLength: 32 })).map(([header, skew, body]) => {
    const head = Buffer.from(header, "utf8");
    const out = Buffer.alloc(4 + head.length + body.length);
    out.writeUInt32BE(Math.max(0, head.length + skew), 0);
    head.copy(out, 4);
    out.set(body, 4 + head.length);
    return { kind: "binary" as const, bytes: out };
  }),
);

const frames = fc.array(fc.oneof({ weight: 6, arbitrary: textFrame }, { weight: 1, arbitrary: binaryFrame }), {
  minLength: 5,
  maxLength: 30,
});

const logged: unknown[] = [];
const recordErrors = { info() {}, warn() {}, error: (...args: unknown[]) => void logged.push(args) };
let nextId = 0;

interface StorageCase {
  name: string;
  make(): Promise<{ storage: Storage; drop(): Promise<void> }>;
}

const pgUp = await postgresAvailable("fuzz over postgres storage");
const storages: StorageCase[] = [
  { name: "memory", make: async () => ({ storage: memoryStorage(), drop: async () => undefined }) },
  {
    name: "sql.js",
    make: async () => {
      const dir = await mkdtemp(join(tmpdir(), "cg-fuzz-"));
      return { storage: sqlJsStorage({ dir }), drop: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  // Strings PostgreSQL cannot take (U+0000) once answered `internal` there only.
  ...(pgUp
    ? [
        {
          name: "postgres",
          make: async () => {
            const schema = `t_${runId()}`;
            return {
              storage: postgresStorage({ connectionString: DATABASE_URL, schema }),
              drop: () => dropSchema(schema),
            };
          },
        },
      ]
    : []),
];

describe.each(storages)("fuzz over $name storage", (storageCase) => {
  let h: Harness;
  let fuzzer: Client;
  let watcher: Client;
  let watcherMessageId: string;
  let drop: () => Promise<void> = async () => undefined;
  const emitted: unknown[] = [];

  beforeAll(async () => {
    const made = await storageCase.make();
    drop = made.drop;
    h = await startGateway({
      storage: made.storage,
      authenticator: tokenAuthenticator({ fuzz: "fuzzer", watch: "watcher" }),
      // The fuzzer sends hundreds of frames a second; the budget is not what is under test here.
      rateLimit: { perSecond: 100_000, burst: 100_000 },
      logger: recordErrors,
    });
    h.gateway.on("error", (error) => void emitted.push(error));
    fuzzer = await Client.connect(h.url, { token: "fuzz" });
    watcher = await Client.connect(h.url, { token: "watch" });
    watcherMessageId = (await watcher.say({ chat_id: "default", text: "kept safe" })).echo.payload.message_id;
  });

  afterAll(async () => {
    await fuzzer?.close();
    await watcher?.close();
    await h?.close();
    await drop();
  });

  it("fuzz - random bad frames never answer internal, errors carry the request id, and another owner's connection keeps answering", async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(frames, async (batch) => {
        const from = fuzzer.frames.length;
        const expectAnswer: string[] = [];
        for (const frame of batch) {
          sent++;
          if (frame.kind === "binary") {
            fuzzer.raw(Buffer.from(frame.bytes));
            continue;
          }
          const id = `f${++nextId}`;
          const text = frame.template.replace('"@ID@"', JSON.stringify(id));
          if (text !== frame.template && !SILENT_ON_SUCCESS.has(frame.type ?? "")) expectAnswer.push(id);
          fuzzer.raw(text);
        }
        // Requests are handled in order, so the pong comes after every answer to the batch.
        expect((await fuzzer.request("ping", { ts: 1 })).type).toBe("pong");
        const answers = fuzzer.frames.slice(from);
        const internal = answers.filter((f) => f.type === "error" && f.payload.code === "internal");
        expect(internal, JSON.stringify(batch).slice(0, 2000)).toEqual([]);
        const answered = new Set(answers.map((f) => f.id));
        expect(
          expectAnswer.filter((id) => !answered.has(id)),
          JSON.stringify(batch).slice(0, 2000),
        ).toEqual([]);
        expect(fuzzer.closeCode).toBeUndefined();

        expect((await watcher.request("ping", { ts: 2 })).payload.ts).toBe(2);
        const history = await watcher.request("history", { chat_id: "default" });
        expect(history.type).toBe("history");
        expect(history.payload.messages.map((m: { message_id: string }) => m.message_id)).toContain(watcherMessageId);
      }),
      { numRuns: 50 },
    );
    expect(sent).toBeGreaterThanOrEqual(250);
    expect(logged).toEqual([]);
    expect(emitted).toEqual([]);
  }, 60_000);
});

describe("fuzz - first frames", () => {
  it("fuzz - a random first frame on a fresh connection gets hello.ok or a clear refusal with its id, never internal", async () => {
    // Every case is a fresh connection from one address: lift the connect rate it would hit.
    const open = await startGateway({ logger: recordErrors, connectRateLimit: { perSecond: 10_000, burst: 10_000 } });
    const first = fc.oneof(
      { weight: 3, arbitrary: textFrame.filter((f) => f.type === "hello") },
      { weight: 2, arbitrary: textFrame },
      { weight: 1, arbitrary: binaryFrame },
    );
    try {
      await fc.assert(
        fc.asyncProperty(first, async (frame) => {
          const c = new Client(open.url);
          await c.opened;
          const id = `h${++nextId}`;
          const text = frame.kind === "text" ? frame.template.replace('"@ID@"', JSON.stringify(id)) : undefined;
          c.raw(text ?? Buffer.from((frame as BinaryFrame).bytes));
          const answer = await c.waitFor(() => true).catch(() => undefined);
          if (answer?.type === "hello.ok") {
            await c.close();
            return;
          }
          expect(answer?.type, JSON.stringify(frame).slice(0, 500)).toBe("error");
          expect(["auth", "unsupported"]).toContain(answer!.payload.code);
          if (text?.includes(JSON.stringify(id))) expect(answer!.id).toBe(id);
          expect([CLOSE_CODES.auth, CLOSE_CODES.invalidHello, CLOSE_CODES.protocolTooNew]).toContain(
            await c.closedPromise,
          );
        }),
        { numRuns: 80 },
      );
    } finally {
      await open.close();
    }
    expect(logged).toEqual([]);
  }, 60_000);
});
