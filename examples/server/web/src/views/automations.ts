// What feeds an automation channel (docs/PROTOCOL.md §17): its hooks (name, mode) and schedules
// (cron, time zone, next run, last result), read-only above the conversation. They are managed
// with the server's CLI; this only shows them, read from GET /api/automations.
import { automations, type Automations, type ScheduleRunInfo } from "../api.js";
import { append, clear, h } from "../dom.js";
import type { Store } from "../store.js";

function when(ms: number | null): string {
  return ms === null ? "never" : new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function lastResult(run: ScheduleRunInfo | null): HTMLElement {
  if (!run) return h("span", { class: "run-result" }, "not run yet");
  if (run.status === "running") return h("span", { class: "run-result running" }, `running since ${when(run.at)}`);
  if (run.status === "ok") return h("span", { class: "run-result ok" }, `ok, ${when(run.at)}`);
  return h("span", { class: "run-result error" }, `failed, ${when(run.at)}${run.error ? `: ${run.error}` : ""}`);
}

export class AutomationsView {
  readonly el = h("section", { class: "automations", "aria-label": "What posts here", hidden: true });
  readonly #store: Store;
  /** The channel the last answer is for, so a slow answer for a channel left meanwhile is dropped. */
  #for: string | undefined;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Show the current lane's hooks and schedules, if it is an automation channel. */
  async render(): Promise<void> {
    const lane = this.#store.current;
    const ch = lane && this.#store.channelOf(lane);
    const chatId = ch?.automation && ch.kind !== "thread" ? ch.chat_id : undefined;
    this.#for = chatId;
    if (!chatId) {
      this.el.hidden = true;
      return;
    }
    let list: Automations;
    try {
      list = await automations();
    } catch {
      return;
    }
    if (this.#for !== chatId) return;
    const hooks = list.hooks.filter((x) => x.chat_id === chatId);
    const schedules = list.schedules.filter((x) => x.chat_id === chatId);
    clear(this.el);
    this.el.hidden = false;
    append(this.el, [
      h("h2", null, "What posts here"),
      hooks.length + schedules.length === 0
        ? h(
            "p",
            { class: "muted" },
            "No webhook or schedule posts here yet: add one with the server's hook or schedule command.",
          )
        : null,
      hooks.length
        ? h(
            "ul",
            { class: "automation-list hooks" },
            hooks.map((x) =>
              h(
                "li",
                null,
                h("span", { class: "tag" }, "webhook"),
                h("strong", null, x.name),
                h("span", { class: "muted" }, x.mode === "turn" ? "asks the agent" : "posts as is"),
              ),
            ),
          )
        : null,
      schedules.length
        ? h(
            "ul",
            { class: "automation-list schedules" },
            schedules.map((x) =>
              h(
                "li",
                null,
                h("span", { class: "tag" }, "schedule"),
                h("strong", null, x.name),
                h("code", null, x.cron),
                h("span", { class: "muted" }, x.tz),
                h("span", null, `next: ${when(x.next_run)}`),
                lastResult(x.last_run),
              ),
            ),
          )
        : null,
    ]);
  }
}
