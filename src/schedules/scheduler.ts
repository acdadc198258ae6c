/**
 * The scheduler (docs/PROTOCOL.md §17): every tick it reads the schedules of all owners, claims in
 * the schedule store the newest slot each one has due (so each slot runs once across processes, and a
 * restart runs only the newest slot it missed), and runs it as a turn on the durable queue whose
 * answer lands in the schedule's automation channel. A slot that comes while the previous run
 * still goes is claimed and skipped. Each run ends once, in whichever process sees it end first
 * (the store's compare-and-set), which raises `notification {kind: "cron"}`.
 * @module
 */
import { GatewayError, isGatewayError } from "../protocol/errors.js";
import { newId } from "../support/id-generator.js";
import type { Owner } from "../protocol/ids.js";
import type { StoredMessage } from "../contracts/records.js";
import { scheduleRunKey, type ScheduleRecord, type ScheduleRun, type ScheduleStore } from "../contracts/schedules.js";
import type { MessageServices } from "../requests/message-requests.js";
import { answerPrompt, findAnswer, storePrompt } from "../lanes/posts.js";
import { newestSlot } from "./cron.js";
import { clip } from "../support/clip.js";
import type { ClockTimer } from "../support/clock.js";

/** What a finished run raises: the gateway's `notify`. */
export type CronNotify = (
  owner: Owner,
  notification: { kind: "cron"; title: string; body: string; chat_id: string; message_id: string },
) => Promise<unknown>;

/** How long a run may be recorded before its prompt is stored (ms): the starting process is between the two writes. */
const PROMPT_GRACE_MS = 60_000;

/** Runs the owners' schedules; one per gateway. */
export class Scheduler {
  readonly #services: MessageServices;
  readonly #store: ScheduleStore;
  readonly #notify: CronNotify;
  #timer: ClockTimer | undefined;
  #ticking: Promise<void> | undefined;

  constructor(services: MessageServices, store: ScheduleStore, notify: CronNotify) {
    this.#services = services;
    this.#store = store;
    this.#notify = notify;
  }

  /** Tick every `tickMs` until {@link Scheduler.stop}. */
  start(tickMs: number): void {
    // On the gateway's clock, whose real timers hold no process open: schedules alone do not keep it.
    this.#timer = this.#services.options.clock.setInterval(() => void this.tick(), tickMs);
    void this.tick();
  }

  /** No new tick; resolves once the one in flight is over (its runs are the lanes' to end). */
  async stop(): Promise<void> {
    this.#services.options.clock.clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
  }

  /** One look at every schedule; a tick still going makes this one a no-op. */
  tick(): Promise<void> {
    this.#ticking ??= this.#visitAll().finally(() => (this.#ticking = undefined));
    return this.#ticking;
  }

  async #visitAll(): Promise<void> {
    try {
      const now = this.#services.now();
      for (const { owner, schedule } of await this.#store.allSchedules()) {
        await this.#visit(owner, schedule, now).catch((error) =>
          this.#services.log.warn(`schedule "${schedule.name}" failed`, error),
        );
      }
    } catch (error) {
      this.#services.log.warn("reading the schedules failed", error);
    }
  }

  async #visit(owner: Owner, schedule: ScheduleRecord, now: number): Promise<void> {
    if (schedule.last_run?.status === "running") await this.reconcile(owner, schedule, schedule.last_run);
    const slot = newestSlot(schedule.cron, schedule.tz, Math.max(schedule.last_slot, schedule.created_at), now);
    if (slot === undefined) return;
    // Its channel was deleted: nothing can land, so no run is made (`list` still shows the schedule).
    if (!(await this.#services.storage.getChannel(owner, schedule.chat_id))) return;
    const claimed = await this.#store.claimScheduleSlot(schedule.schedule_id, slot);
    if (!claimed) return;
    const previous = claimed.schedule.last_run;
    if (previous?.status === "running") {
      this.#services.log.info(
        `schedule "${schedule.name}": slot ${new Date(slot).toISOString()} skipped, the previous run still goes`,
      );
      return;
    }
    await this.begin(owner, claimed.schedule, slot, scheduleRunKey(previous));
  }

  /**
   * Start a run for `slot`: recorded `running` first (compared with `expected`, the run as read),
   * then its prompt stored waiting and queued. Resolves with the run once its prompt is stored, or
   * undefined when another writer changed the latest run first.
   */
  async begin(
    owner: Owner,
    schedule: ScheduleRecord,
    slot: number,
    expected: string,
  ): Promise<ScheduleRun | undefined> {
    const services = this.#services;
    const run: ScheduleRun = { slot, status: "running", prompt_id: newId("m"), at: services.now() };
    if (!(await this.#store.recordScheduleRun(schedule.schedule_id, run, expected))) return undefined;
    let prompt: StoredMessage;
    try {
      const resolved = await services.resolveLane(owner, schedule.chat_id, null);
      prompt = await storePrompt(
        services,
        owner,
        { chat_id: resolved.chat_id, thread_id: null },
        schedule.prompt,
        run.prompt_id,
      );
    } catch (error) {
      // Nothing can land: the channel is gone, or the storage refused.
      await this.#end(owner, schedule, run, { status: "error", error: reasonOf(error) });
      return run;
    }
    answerPrompt(services, owner, { chat_id: prompt.chat_id, thread_id: null }, prompt)
      .then(
        (answer) => this.#finish(owner, schedule, run, answer),
        // Shut down before it ran: the prompt waits, stored, and the next start answers it.
        (error) =>
          isGatewayError(error) && error.code === "unsupported"
            ? undefined
            : this.#end(owner, schedule, run, { status: "error", error: reasonOf(error) }),
      )
      .catch((error) => services.log.warn(`schedule "${schedule.name}": recording its run failed`, error));
    return run;
  }

  /**
   * A run recorded `running` that no job here will end (its process died, or recovery answered its
   * prompt): ended from what is stored, once its answer is.
   */
  async reconcile(owner: Owner, schedule: ScheduleRecord, run: ScheduleRun): Promise<void> {
    const services = this.#services;
    const prompt = await services.storage.getMessage(owner, run.prompt_id);
    if (!prompt) {
      if (services.now() - run.at < PROMPT_GRACE_MS) return;
      return this.#end(owner, schedule, run, {
        status: "error",
        error: "the run's prompt was deleted, or lost before it was stored",
      });
    }
    if (prompt.waiting) return;
    const answer = await findAnswer(services, owner, prompt);
    if (answer && answer.status !== "streaming") await this.#finish(owner, schedule, run, answer);
  }

  async #finish(owner: Owner, schedule: ScheduleRecord, run: ScheduleRun, answer: StoredMessage): Promise<void> {
    const failed = answer.status !== "complete";
    // An error answer ends with why; an interrupted or stopped one says no more than that.
    const error = !failed
      ? undefined
      : (answer.status === "error" && lastParagraph(answer.text)) || `the answer ended ${answer.status}`;
    await this.#end(
      owner,
      schedule,
      run,
      { status: failed ? "error" : "ok", answer_id: answer.message_id, ...(error ? { error } : {}) },
      answer.text,
    );
  }

  /** Store the run's end, once across processes; the writer that wins raises the notification. */
  async #end(
    owner: Owner,
    schedule: ScheduleRecord,
    run: ScheduleRun,
    end: Pick<ScheduleRun, "status" | "answer_id" | "error">,
    text?: string,
  ): Promise<void> {
    const ended: ScheduleRun = { slot: run.slot, prompt_id: run.prompt_id, ...end, at: this.#services.now() };
    const store = this.#store;
    if (!(await store.recordScheduleRun(schedule.schedule_id, ended, scheduleRunKey(run)))) {
      // Another process ended it; or the schedule was removed meanwhile, when only this job knows the run.
      if ((await store.listSchedules(owner)).some((s) => s.schedule_id === schedule.schedule_id)) return;
    }
    if (end.answer_id === undefined) {
      this.#services.log.warn(`schedule "${schedule.name}" failed: ${end.error}`);
      return;
    }
    const body = end.status === "ok" ? oneLine(text ?? "") : `failed: ${oneLine(end.error ?? "")}`;
    await this.#notify(owner, {
      kind: "cron",
      title: schedule.name,
      body: body || schedule.name,
      chat_id: schedule.chat_id,
      // The answer is pushed as answers are; the notification is the same push (docs/PROTOCOL.md §15.2).
      message_id: end.answer_id,
    });
  }
}

function reasonOf(error: unknown): string {
  return error instanceof GatewayError ? error.message : "the gateway could not store the run (see its log)";
}

function lastParagraph(text: string): string {
  return oneLine(
    text
      .trim()
      .split(/\n\s*\n/)
      .pop() ?? "",
  );
}

/** On one line, cut at 200 characters (what a notification body holds). */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return clip(line, 200);
}
