// The row of actions under a finished message: copy its text, regenerate an answer (the user
// message before it is sent again), edit a message of the user's (its text goes back into the
// composer, to be sent as a new message: the protocol has no edit, docs/PROTOCOL.md §4.1).
import { copyWithFeedback } from "../code-blocks.js";
import { h } from "../dom.js";
import type { Msg } from "../msg.js";

/** What the actions do; the app knows the lane and the composer. */
export interface MessageActions {
  regenerate(msg: Msg): void;
  edit(msg: Msg): void;
  /** Take a waiting message out of the lane's queue (`message.delete`, docs/PROTOCOL.md §14.4). */
  cancelQueued(msg: Msg): void;
  /** Run a waiting message now: it is sent again with `when_busy: "interrupt"` and the waiting one deleted. */
  sendNow(msg: Msg): void;
}

/** The actions of a message waiting in the lane's queue: Cancel and Send now, always shown. */
export function queuedActionsEl(msg: Msg, actions: MessageActions): HTMLElement {
  const short = msg.text.slice(0, 40);
  return h(
    "div",
    { class: "msg-actions queued-actions", role: "group", "aria-label": "Queued message actions" },
    h(
      "button",
      {
        type: "button",
        class: "msg-action",
        "aria-label": `Cancel queued message: ${short}`,
        onclick: () => actions.cancelQueued(msg),
      },
      "Cancel",
    ),
    h(
      "button",
      {
        type: "button",
        class: "msg-action",
        "aria-label": `Send now, stopping the answer: ${short}`,
        onclick: () => actions.sendNow(msg),
      },
      "Send now",
    ),
  );
}

export function messageActionsEl(msg: Msg, actions: MessageActions): HTMLElement {
  const copy = h("button", { type: "button", class: "msg-action", "aria-label": "Copy message text" }, "Copy");
  copy.addEventListener("click", () => void copyWithFeedback(copy, msg.text));
  const second =
    msg.role === "assistant"
      ? h(
          "button",
          {
            type: "button",
            class: "msg-action",
            "aria-label": "Regenerate this answer",
            onclick: () => actions.regenerate(msg),
          },
          "Regenerate",
        )
      : h(
          "button",
          {
            type: "button",
            class: "msg-action",
            "aria-label": "Edit as a new message",
            onclick: () => actions.edit(msg),
          },
          "Edit",
        );
  return h(
    "div",
    { class: "msg-actions", role: "group", "aria-label": "Message actions" },
    msg.text ? copy : null,
    second,
  );
}
