/**
 * The conversation's live state as the gateway shows it to every device (docs/PROTOCOL.md §14):
 * each lane's running answer (its text so far and its tools, running and finished) and each lane's queue of
 * waiting messages. Built from frames alone, the ones a device joining mid-turn is sent after
 * `hello.ok` and `sync.done` included, so a client that connects late holds what the others hold.
 * @module
 */
import type { LaneRef, ToolEndPayload, ToolStartPayload } from "./frames.js";
import type { ServerFrame } from "chat-gateway/protocol";

/**
 * A tool of a running answer: still running until its `tool.end` (then `ok`, `output` and
 * `duration` are set). A client that joins mid-turn gets the finished ones too (docs/PROTOCOL.md §14.3).
 */
export type RunningTool = Pick<ToolStartPayload, "index" | "name" | "preview" | "args"> &
  Partial<Pick<ToolEndPayload, "output" | "ok" | "duration">>;

/** An answer still streaming in a lane. */
export interface RunningTurn {
  message_id: string;
  chat_id: string;
  thread_id: string | null;
  /** The user message it answers, when the gateway said (`message.start.reply_to`). */
  reply_to?: string;
  /** The whole text so far. */
  text: string;
  reasoning: string;
  /** Its tools in call order: the running ones without `ok`, the finished ones with their outcome. */
  tools: RunningTool[];
}

/** A lane's waiting messages, in the order they will run. */
export interface LaneQueue {
  chat_id: string;
  thread_id: string | null;
  message_ids: string[];
}

/** A tool's end, kept on its entry (one made up when its start never came). */
function endTool(turn: RunningTurn, p: ToolEndPayload): void {
  let tool = turn.tools.find((x) => x.index === p.index);
  if (!tool) {
    tool = { index: p.index, name: p.name, preview: "", args: {} };
    turn.tools.push(tool);
    turn.tools.sort((a, b) => a.index - b.index);
  }
  Object.assign(tool, { output: p.output, ok: p.ok, duration: p.duration });
}

function laneKey(lane: LaneRef): string {
  return `${lane.chat_id}\u0000${lane.thread_id ?? ""}`;
}

/** Running answers by message id and queues by lane, kept from the frames a client receives. */
export class LiveTurns {
  readonly #turns = new Map<string, RunningTurn>();
  readonly #queues = new Map<string, LaneQueue>();

  /** Apply one frame (a `message.update` with its whole text); which of the two views changed. */
  apply(frame: ServerFrame): { turns: boolean; queues: boolean } {
    switch (frame.type) {
      case "message.start": {
        const p = frame.payload;
        if (this.#turns.has(p.message_id)) return { turns: false, queues: false };
        this.#turns.set(p.message_id, {
          message_id: p.message_id,
          chat_id: p.chat_id,
          thread_id: p.thread_id,
          ...(p.reply_to ? { reply_to: p.reply_to } : {}),
          text: "",
          reasoning: "",
          tools: [],
        });
        return { turns: true, queues: false };
      }
      case "message.update": {
        const p = frame.payload;
        return {
          turns: this.#update(p.message_id, (t) =>
            Object.assign(t, { text: p.text ?? t.text, reasoning: p.reasoning ?? t.reasoning }),
          ),
          queues: false,
        };
      }
      case "tool.start": {
        const p = frame.payload;
        const start = (t: RunningTurn) => {
          if (!t.tools.some((x) => x.index === p.index))
            t.tools.push({ index: p.index, name: p.name, preview: p.preview, args: p.args });
        };
        return { turns: this.#update(p.message_id, start), queues: false };
      }
      case "tool.end": {
        const p = frame.payload;
        return { turns: this.#update(p.message_id, (t) => endTool(t, p)), queues: false };
      }
      case "message.stop":
      case "message":
        return { turns: this.#turns.delete(frame.payload.message_id), queues: false };
      case "message.deleted":
        return { turns: frame.payload.message_ids.map((id) => this.#turns.delete(id)).some(Boolean), queues: false };
      case "lane.queue": {
        const p = frame.payload;
        if (p.message_ids.length === 0) this.#queues.delete(laneKey(p));
        else
          this.#queues.set(laneKey(p), { chat_id: p.chat_id, thread_id: p.thread_id, message_ids: [...p.message_ids] });
        return { turns: false, queues: true };
      }
      default:
        return { turns: false, queues: false };
    }
  }

  #update(messageId: string, change: (turn: RunningTurn) => void): boolean {
    const turn = this.#turns.get(messageId);
    if (!turn) return false;
    change(turn);
    return true;
  }

  /** Forget everything: a new connection is about to be sent the state afresh. */
  clear(): void {
    this.#turns.clear();
    this.#queues.clear();
  }

  /** The running answers, of one lane when given. */
  turns(lane?: LaneRef): RunningTurn[] {
    const all = [...this.#turns.values()];
    return lane === undefined
      ? all
      : all.filter((t) => t.chat_id === lane.chat_id && t.thread_id === (lane.thread_id ?? null));
  }

  /** Every lane's queue, or one lane's waiting message ids (empty when none wait). */
  queues(): LaneQueue[] {
    return [...this.#queues.values()];
  }

  queue(lane: LaneRef): string[] {
    return this.#queues.get(laneKey(lane))?.message_ids ?? [];
  }
}
