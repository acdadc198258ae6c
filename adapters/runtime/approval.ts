/**
 * Tool approval, the same in both bindings: which calls ask the person first, the approval ask
 * (docs/PROTOCOL.md §11, `picker.approval`) and what the model is told when the answer is not yes.
 * @module
 */
import type { AskAnswer, ToolApproval, TurnInput } from "chat-gateway";
import { argsPreview } from "./text.js";

/** Whether `rule` makes this call wait for approval. A rule that throws asks: failing closed is the safe side. */
export async function callNeedsApproval(
  rule: ToolApproval | undefined,
  name: string,
  args: Record<string, unknown>,
): Promise<boolean> {
  if (rule === undefined) return false;
  if (typeof rule !== "function") return rule.includes(name);
  try {
    return (await rule(name, args)) === true;
  } catch {
    return true;
  }
}

/** Whether a rule is usable; a `TypeError` for the binding to throw at creation otherwise. */
export function checkToolApproval(binding: string, rule: unknown): void {
  if (rule === undefined || typeof rule === "function") return;
  if (Array.isArray(rule) && rule.every((name) => typeof name === "string")) return;
  throw new TypeError(`${binding}: needsApproval must be a list of tool names or a function of (name, args)`);
}

/**
 * Asks the person to approve one tool call and waits. Returns undefined when approved, otherwise
 * the text the model gets instead of the tool's result.
 */
export async function askApproval(
  input: TurnInput,
  name: string,
  args: Record<string, unknown>,
  preview: string = argsPreview(name, args),
): Promise<string | undefined> {
  const answer = await input.ask({ kind: "approval", title: `Run ${name}?`, body: preview, tool: { name, args } });
  return answer.outcome === "selected" && answer.option_id === "approve" ? undefined : deniedText(answer);
}

/** What the model is told about a call that was not approved, so it does not retry it blindly. */
function deniedText(answer: AskAnswer): string {
  switch (answer.outcome) {
    case "selected":
      return answer.text
        ? `The person denied this tool call and said: ${answer.text}`
        : "The person denied this tool call; it was not run.";
    case "expired":
      return "No one approved this tool call in time; it was not run.";
    default:
      return "The tool call was not approved (the request was cancelled); it was not run.";
  }
}
