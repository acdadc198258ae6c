// What a gateway command did, in a few words, for the small line that stands for it in the
// transcript instead of a chat bubble (docs/PROTOCOL.md §14.2).

const SIMPLE: Record<string, string> = {
  "/stop": "Stopped",
  "/cancel": "Stopped",
  "/approve": "Approved",
  "/deny": "Denied",
  "/new": "New conversation",
  "/reset": "Conversation reset",
  "/help": "Asked for help",
  "/commands": "Listed the commands",
};

/** "Stopped", "Approved", "Answered: tea", "Model: demo-fast"; the text itself for an unknown command. */
export function commandLabel(text: string): string {
  const trimmed = text.trim();
  const [first = "", ...rest] = trimmed.split(/\s+/);
  const name = first.toLowerCase();
  const arg = rest.join(" ");
  if (name === "/answer") return arg ? `Answered: ${arg}` : "Answered";
  if (name === "/model") return arg ? `Model: ${arg}` : "Asked for the model";
  const simple = SIMPLE[name];
  if (simple) return simple;
  return trimmed;
}
