/**
 * `send_message` (docs/PROTOCOL.md §20.2): sends a message as the bridge's device, follows its
 * answer through the device's frames, reports progress while it streams, and returns its final
 * text. A client that gives up does not stop the turn: it ends and lands in history.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { AnswerEnd, AnswerEvent } from "chat-gateway/doors";
import { loadDoors } from "./doors.js";
import { laneName, listChannels, resolveLane, type Lane } from "./lanes.js";
import type { McpGatewayLink } from "./link.js";
import { ToolError } from "./results.js";

/** A progress report: the MCP notification's `progress` (only grows) and `message`. */
export type ProgressReport = (progress: number, message: string) => void;

/** What `send_message` answers. */
export interface SentAnswer {
  lane: string;
  message_id: string;
  answer_id: string;
  status: string;
  text: string;
}

/** The lane to send into, and whether the send makes a new thread of it. */
async function target(link: McpGatewayLink, lane: string | undefined): Promise<{ lane: Lane; newThread: boolean }> {
  if (lane !== undefined) return { lane: await resolveLane(link, lane), newThread: false };
  const home = (await listChannels(link)).find((c) => c.is_default);
  if (!home) throw new ToolError("not_found", "no default channel to start a conversation in");
  return { lane: { chat_id: home.chat_id, thread_id: null }, newThread: true };
}

/** What a person watching would read of an answer's event; empty for none. */
function describe(event: AnswerEvent): string {
  switch (event.type) {
    case "text":
      return event.delta;
    case "tool-start":
      return `running ${event.name}${event.preview ? `: ${event.preview}` : ""}`;
    case "tool-end":
      return `${event.name} ${event.ok ? "done" : "failed"}`;
    case "ask": {
      const p = event.frame.payload;
      if (event.frame.type === "picker.resolved") return `ask ${String(p.picker_id)} ${String(p.outcome)}`;
      return `waiting for an answer to "${String(p.title)}" (answer_ask picker_id ${String(p.picker_id)})`;
    }
    default:
      return "";
  }
}

/**
 * Sends `text` and waits for its answer's end, `maxWaitMs` at most, or until `signal` aborts.
 * @throws the gateway's refusal of the send, or a {@link ToolError} when the answer did not end
 */
export async function sendMessage(
  link: McpGatewayLink,
  input: { lane?: string; text: string },
  options: { progress: ProgressReport; signal?: AbortSignal; maxWaitMs: number },
): Promise<SentAnswer> {
  const { lane, newThread } = await target(link, input.lane);
  const { AnswerFollower } = await loadDoors();
  let step = 0;
  let settle: (outcome: AnswerEnd | Error) => void = () => undefined;
  const outcome = new Promise<AnswerEnd | Error>((resolve) => {
    settle = resolve;
  });
  const follower = new AnswerFollower((event) => {
    if (event.type === "end") return settle(event.end);
    if (event.type === "gone") return settle(new ToolError("unsupported", event.reason));
    const said = describe(event);
    if (said) options.progress(++step, said);
  });
  const unsubscribe = link.subscribe((frame) => follower.handle(frame));
  const abort = () => follower.fail("the client gave up waiting; the answer goes on and lands in history");
  options.signal?.addEventListener("abort", abort);
  const timer = setTimeout(
    () => follower.fail("the answer took too long; it goes on and lands in history"),
    options.maxWaitMs,
  );
  try {
    const echo = await link.request("message.send", {
      chat_id: lane.chat_id,
      thread_id: lane.thread_id,
      text: input.text,
      client_msg_id: `mcp:${randomUUID()}`,
      ...(newThread ? { auto_thread: true } : {}),
    });
    const sent: Lane = { chat_id: echo.chat_id as string, thread_id: (echo.thread_id as string | null) ?? null };
    follower.follow(echo.message_id as string, sent);
    const end = await outcome;
    if (end instanceof Error) throw end;
    return {
      lane: laneName(sent),
      message_id: echo.message_id as string,
      answer_id: end.messageId,
      status: end.status,
      text: end.text,
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", abort);
    unsubscribe();
  }
}
