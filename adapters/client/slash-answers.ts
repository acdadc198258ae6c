/**
 * The slash commands that answer an ask from any device (docs/PROTOCOL.md §11), for a device that
 * does not declare `caps.pickers` and learns of asks from notifications: send the text with
 * `client.sendMessage` in the ask's lane.
 *
 * @example
 * ```ts
 * client.on("notification", async (n) => {
 *   if (n.kind === "approval" && n.picker_id && (await confirmWithUser(n.title))) {
 *     await client.sendMessage({ chat_id: n.chat_id!, thread_id: n.thread_id, text: approveCommand(n.picker_id) });
 *   }
 * });
 * ```
 * @module
 */
/** `/approve [picker_id]`: without an id, the newest open approval in the lane. */
export function approveCommand(pickerId?: string): string {
  return withArgument("/approve", pickerId);
}

/** `/deny [picker_id]`: without an id, the newest open approval in the lane. */
export function denyCommand(pickerId?: string): string {
  return withArgument("/deny", pickerId);
}

/** `/answer <text>`: answers the newest open question in the lane in the person's words. */
export function answerCommand(text: string): string {
  return withArgument("/answer", text);
}

/** `/model <id>`: chooses the lane's model, answering the newest open model picker. */
export function modelCommand(modelId: string): string {
  return withArgument("/model", modelId);
}

function withArgument(command: string, argument: string | undefined): string {
  const trimmed = argument?.trim() ?? "";
  return trimmed === "" ? command : `${command} ${trimmed}`;
}
