// The gateway's asks in an editor (docs/PROTOCOL.md §20): an approval, or a question with options,
// becomes `session/request_permission`; the editor's choice goes back as `picker.select`, where
// the first answer of any device wins. A question that wants free text only is shown as an agent
// message and answered from another device.
import type { PermissionOption, PermissionOptionKind, RequestPermissionRequest } from "@agentclientprotocol/sdk";
import type { PickerApprovalPayload, PickerConfirmPayload } from "chat-gateway/client";

/** An ask the bridge shows: an approval or a question. */
export type Ask = ({ kind: "approval" } & PickerApprovalPayload) | ({ kind: "confirm" } & PickerConfirmPayload);

const REJECTING = /^(deny|reject|no|cancel|abort|decline)/i;

/** ACP wants each option marked as allowing or rejecting; the ids the gateway and runtimes use say which. */
function optionKind(ask: Ask, id: string, position: number): PermissionOptionKind {
  if (ask.kind === "approval" && ask.options.length === 2) return position === 0 ? "allow_once" : "reject_once";
  return REJECTING.test(id) ? "reject_once" : "allow_once";
}

/** Whether the editor can answer the ask by picking an option. */
export function hasOptions(ask: Ask): boolean {
  return ask.options.length > 0;
}

/** The `session/request_permission` of an ask with options. */
export function permissionRequest(sessionId: string, ask: Ask): RequestPermissionRequest {
  const options: PermissionOption[] = ask.options.map((option, position) => ({
    optionId: option.id,
    name: option.label,
    kind: optionKind(ask, option.id, position),
  }));
  const tool = ask.kind === "approval" ? ask.tool : undefined;
  const body = ask.body ? [{ type: "content" as const, content: { type: "text" as const, text: ask.body } }] : [];
  return {
    sessionId,
    options,
    toolCall: {
      toolCallId: `ask:${ask.picker_id}`,
      title: ask.title,
      kind: ask.kind === "approval" ? "execute" : "other",
      status: "pending",
      content: body,
      ...(tool ? { rawInput: tool.args } : {}),
    },
  };
}

/** A free-text question as the agent message that shows it. */
export function questionText(ask: Ask): string {
  const body = ask.body ? `\n${ask.body}` : "";
  return `\n\n**${ask.title}**${body}\n(Answer it from another device of this account.)\n\n`;
}
