// The first `user add` adopting the anonymous owner's data, with the CLI and the storages in this
// process: what it refuses before asking for a password, and what moves, media files included.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type MediaStore } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import { planAdoption, type AdoptionServer, type UserCliData } from "chat-gateway/cli";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { memoryStorage } from "chat-gateway/storage/memory";
import { runUserCliHere, tempDir } from "./helpers.js";

let cleanup: () => Promise<void>;
let file: string;
beforeEach(async () => {
  let dir: string;
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
});
afterEach(() => cleanup());

function cli(argv: string[], data: UserCliData) {
  return runUserCliHere(argv, { input: "correct horse\n", env: { GATEWAY_USERS_FILE: file }, data: () => data });
}

async function putFile(store: MediaStore, owner: string, id: string, bytes: Buffer): Promise<void> {
  const writer = await store.createWriter(owner, id);
  await writer.write(bytes);
  await writer.commit();
}

async function readFile(store: MediaStore, owner: string, id: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.read(owner, id)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A device record of `owner` with no push target. */
function putDevice(storage: Storage, owner: string, device_id: string, device_name: string): Promise<void> {
  const caps = { min_protocol: 1, media: true, push: "none", streaming: true };
  return storage.putDevice(owner, { device_id, device_name, caps, last_seen: 1 });
}

/** A channel of the anonymous owner with one message holding a picture (its file too), and its frame. */
async function postPicture(storage: Storage, mediaStore: MediaStore, n: number, channel: string): Promise<void> {
  const picture = { media_id: `pic${n}`, kind: "image", mime: "image/png", size: 7, filename: "p.png" } as const;
  await putFile(mediaStore, ANONYMOUS_OWNER, picture.media_id, Buffer.from("picture"));
  await storage.putMedia(ANONYMOUS_OWNER, {
    ...picture,
    owner: ANONYMOUS_OWNER,
    sha256: "ab".repeat(32),
    created_ts: n,
  });
  const chat_id = n === 1 ? "default" : channel.toLowerCase();
  await storage.commit(ANONYMOUS_OWNER, {
    channels: [{ chat_id, name: channel, kind: "channel", parent_chat_id: null, is_default: n === 1, archived: false }],
    messages: [
      {
        message_id: `m${n}`,
        role: "user",
        text: "hello",
        reasoning: "",
        ts: n,
        media: [picture],
        chat_id,
        thread_id: null,
      },
    ],
    outbox: [{ type: "message.new", payload: { message_id: `m${n}` } }],
  });
}

/** The anonymous owner's chat: a message holding a picture, its frame, a device. */
async function chatAnonymously(storage: Storage, mediaStore: MediaStore): Promise<void> {
  await postPicture(storage, mediaStore, 1, "Default");
  // Anything local could have registered it, with its own push target, while login was off.
  await storage.putDevice(ANONYMOUS_OWNER, {
    device_id: "d1",
    device_name: "phone",
    caps: { min_protocol: 1, media: true, push: "ntfy", streaming: true },
    last_seen: 1,
    ntfy_topic: "planted",
  });
}

describe("user CLI - the first user add adopts the anonymous owner's data", () => {
  it("adopt - lists what it will move, then moves messages, media records and their files to the new user; never the devices or their push targets", async () => {
    const storage = memoryStorage();
    const mediaStore = memoryMediaStore();
    await chatAnonymously(storage, mediaStore);
    const { code, out, err } = await cli(["user", "add", "alice", "--adopt"], { storage, mediaStore });
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toBe(
      'alice will adopt the chats made while login was off: 1 channel ("Default"), with its 1 message and media; not the device registered while login was off: it gets alice\'s messages and pushes only once it signs in as alice\n' +
        "added alice; login protection is on\nalice adopted the chats made while login was off: 1 channel, 1 message, 1 media file\n",
    );
    expect(await storage.listDevices("alice")).toEqual([]);
    expect((await storage.listDevices(ANONYMOUS_OWNER)).map((d) => d.ntfy_topic)).toEqual(["planted"]);
    expect((await storage.getMessage("alice", "m1"))?.text).toBe("hello");
    expect((await storage.getMedia("alice", "pic1"))?.owner).toBe("alice");
    expect(await readFile(mediaStore, "alice", "pic1")).toEqual(Buffer.from("picture"));
    await expect(readFile(mediaStore, ANONYMOUS_OWNER, "pic1")).rejects.toBeDefined();
    expect(await storage.listChannels(ANONYMOUS_OWNER)).toEqual([]);
  });

  it("adopt - counts of more than one read in the plural: channels and threads, devices, messages, media files", async () => {
    const storage = memoryStorage();
    const mediaStore = memoryMediaStore();
    await chatAnonymously(storage, mediaStore);
    await postPicture(storage, mediaStore, 2, "Ideas");
    await putDevice(storage, ANONYMOUS_OWNER, "d2", "laptop");
    const { code, out } = await cli(["user", "add", "alice", "--adopt"], { storage, mediaStore });
    expect(code).toBe(0);
    expect(out).toBe(
      'alice will adopt the chats made while login was off: 2 channels and threads ("Default", "Ideas"), with their 2 messages and media; not the 2 devices registered while login was off: they get alice\'s messages and pushes only once they sign in as alice\n' +
        "added alice; login protection is on\nalice adopted the chats made while login was off: 2 channels and threads, 2 messages, 2 media files\n",
    );
  });

  it("adopt - refuses a storage without the adoptOwner capability before the password, naming --no-adopt; the user is not added", async () => {
    const inner = memoryStorage();
    const { adoptOwner: _, capabilities: __, ...rest } = inner;
    const storage = defineStorage({ ...rest, capabilities: { media: true } });
    expect(storage.capabilities.adoptOwner).toBe(false);
    const { code, err } = await cli(["user", "add", "alice"], { storage });
    expect(code).toBe(1);
    expect(err).toMatch(
      /cannot hand the anonymous chats to alice \(it lacks the adoptOwner capability\); add the user with --no-adopt/,
    );
    expect((await cli(["user", "add", "alice", "--no-adopt"], { storage })).code).toBe(0);
  });

  it("adopt - refuses a name that already has data (a removed user's), and leaves both owners as they were", async () => {
    const storage = memoryStorage();
    const mediaStore = memoryMediaStore();
    await chatAnonymously(storage, mediaStore);
    await putDevice(storage, "alice", "old", "old phone");
    const { code, err } = await cli(["user", "add", "alice"], { storage, mediaStore });
    expect(code).toBe(1);
    expect(err).toMatch(/alice already has chats of its own .*cannot be merged/);
    expect((await storage.listDevices("alice")).map((d) => d.device_id)).toEqual(["old"]);
    expect((await storage.getMessage(ANONYMOUS_OWNER, "m1"))?.text).toBe("hello");
    expect(await readFile(mediaStore, ANONYMOUS_OWNER, "pic1")).toEqual(Buffer.from("picture"));
  });

  it("adopt - with nothing to adopt, or for a second user, only the user is added", async () => {
    const storage = memoryStorage();
    expect(await cli(["user", "add", "alice"], { storage })).toEqual({
      code: 0,
      out: "added alice; login protection is on\n",
      err: "",
    });
    await chatAnonymously(storage, memoryMediaStore());
    expect(await cli(["user", "add", "bob"], { storage })).toEqual({ code: 0, out: "added bob\n", err: "" });
    expect(await storage.listChannels("bob")).toEqual([]);
    expect((await storage.listChannels(ANONYMOUS_OWNER)).length).toBe(1);
  });

  it("adopt - through a running server: the CLI asks it (its storage stays open and is never opened here), and its refusals read as the CLI's own", async () => {
    const storage = memoryStorage();
    const mediaStore = memoryMediaStore();
    await storage.open();
    await chatAnonymously(storage, mediaStore);
    const asked: string[] = [];
    // What the example server answers over its admin socket: planAdoption on the storage it holds.
    const server: AdoptionServer = {
      async plan(to) {
        asked.push(`plan ${to}`);
        return (await planAdoption({ storage, mediaStore }, to))?.plan ?? null;
      },
      async adopt(to) {
        asked.push(`adopt ${to}`);
        return (await planAdoption({ storage, mediaStore }, to))!.run();
      },
    };
    const data = () => {
      throw new Error("the storage is held by the server");
    };
    const run = (name: string) =>
      runUserCliHere(["user", "add", name, "--adopt"], {
        input: "correct horse\n",
        env: { GATEWAY_USERS_FILE: file },
        data,
        server: async () => server,
      });
    await putDevice(storage, "carol", "old", "old phone");
    expect(await run("carol")).toEqual({
      code: 1,
      out: "",
      err: expect.stringMatching(/^carol already has chats of its own/),
    });
    const added = await run("alice");
    expect([added.code, added.err]).toEqual([0, ""]);
    expect(added.out).toMatch(
      /\nalice adopted the chats made while login was off: 1 channel, 1 message, 1 media file\n$/,
    );
    expect(asked).toEqual(["plan carol", "plan alice", "adopt alice"]);
    expect((await storage.getMessage("alice", "m1"))?.text).toBe("hello");
    expect(await readFile(mediaStore, "alice", "pic1")).toEqual(Buffer.from("picture"));
    // The server's storage was used open and left open.
    expect((await storage.listChannels("alice")).length).toBe(1);
  });
});
