/**
 * `commands.complete` (docs/PROTOCOL.md §11): completions of a typed slash command. The gateway
 * completes command names and its own commands' arguments (open picker ids, model ids); the
 * runtime's optional completer does the rest.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { AskServices } from "./ask-services.js";
import type { Owner } from "../protocol/ids.js";
import type { Completion } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import { choiceLabels } from "./ask-commands.js";

/** Longest line completed, and most completions returned (docs/PROTOCOL.md §11). */
export const COMPLETE_LIMITS = { textMax: 1_000, completionsMax: 50, runtimeWaitMs: 2_000 } as const;

function matching(candidates: Completion[], text: string): Completion[] {
  return candidates.filter((c) => c.value.toLowerCase().startsWith(text.toLowerCase()) && c.value !== text);
}

/** Arguments the gateway completes itself, for its own commands. */
async function ownArguments(
  services: AskServices,
  owner: Owner,
  lane: Lane,
  builtin: string,
  name: string,
): Promise<Completion[] | undefined> {
  const open = (kind: "approval" | "confirm" | "model") => services.asks.inLane(owner, lane, kind);
  if (builtin === "/approve" || builtin === "/deny")
    return open("approval").map((a) => ({ value: `${name} ${a.spec.picker_id}`, description: a.spec.title }));
  if (builtin === "/answer") {
    const newest = open("confirm").at(-1);
    return newest
      ? [...choiceLabels(newest.spec.frame.payload)].map(([id, label]) => ({
          value: `${name} ${id}`,
          description: label,
        }))
      : [];
  }
  if (builtin === "/model") {
    const offered = new Map<string, string>();
    for (const ask of open("model"))
      for (const [id, label] of choiceLabels(ask.spec.frame.payload)) offered.set(id, label);
    for (const model of (await services.runtime.models?.()) ?? [])
      if (!offered.has(model.id)) offered.set(model.id, model.label);
    return [...offered].map(([id, label]) => ({ value: `${name} ${id}`, description: label }));
  }
  return undefined;
}

/** What the runtime's completer offers, bounded in time and shape; none when it fails. */
async function runtimeCompletions(
  services: AskServices,
  owner: Owner,
  lane: Lane,
  text: string,
): Promise<Completion[]> {
  const complete = services.runtime.complete;
  if (!complete) return [];
  const signal = AbortSignal.timeout(COMPLETE_LIMITS.runtimeWaitMs);
  const late = new Promise<Completion[]>((resolve) =>
    signal.addEventListener("abort", () => resolve([]), { once: true }),
  );
  try {
    const listed = await Promise.race([
      Promise.resolve(complete.call(services.runtime, { owner, ...lane, text, signal })),
      late,
    ]);
    return (Array.isArray(listed) ? listed : [])
      .filter((c) => typeof c?.value === "string" && c.value.startsWith("/"))
      .map((c) => ({ value: c.value, description: String(c.description ?? "") }));
  } catch (error) {
    services.log.warn("the runtime's completer failed", error);
    return [];
  }
}

/** Handle `commands.complete`: the completions of `text` in its lane. */
export async function completeCommand(
  services: AskServices,
  owner: Owner,
  payload: ClientPayloads["commands.complete"],
): Promise<Completion[]> {
  const lane = await services.resolveLane(owner, payload.chat_id, payload.thread_id);
  const text = payload.text;
  if (text.length > COMPLETE_LIMITS.textMax)
    throw new GatewayError("unsupported", `field "text": at most ${COMPLETE_LIMITS.textMax} characters`);
  const typed = /^(\/\S*)(\s+[\s\S]*)?$/.exec(text.trimStart());
  if (!typed) return [];
  let found: Completion[];
  if (typed[2] === undefined) {
    const names = (await services.commands.catalog()).flatMap((c) =>
      [c.name, ...c.aliases].map((n) => ({ value: n, description: c.description })),
    );
    found = matching(names, typed[1]!.toLowerCase());
  } else {
    const source = await services.commands.resolve(typed[1]!);
    const own =
      source?.kind === "builtin"
        ? await ownArguments(
            services,
            owner,
            { chat_id: lane.chat_id, thread_id: lane.thread_id },
            source.builtin,
            typed[1]!.toLowerCase(),
          )
        : undefined;
    const line = `${typed[1]!.toLowerCase()} ${typed[2].trim()}`;
    found = own
      ? matching(own, line)
      : await runtimeCompletions(services, owner, { chat_id: lane.chat_id, thread_id: lane.thread_id }, text);
  }
  return found
    .slice(0, COMPLETE_LIMITS.completionsMax)
    .map((c) => ({ value: c.value.slice(0, COMPLETE_LIMITS.textMax), description: c.description.slice(0, 200) }));
}
