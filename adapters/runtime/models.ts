/**
 * The models a binding offers for a lane (docs/PROTOCOL.md §11, `picker.model` and `/model`), and
 * the one a turn answers with: the lane's choice when the binding offers it, else the default.
 * @module
 */

/** A model the person may choose; `label` defaults to the id. */
export interface OfferedModel {
  id: string;
  label?: string;
}

/** The default model first, then the other offered ones, each once, labelled. */
export function modelList(
  defaultId: string,
  offered: readonly OfferedModel[] | undefined,
): { id: string; label: string }[] {
  const list = [{ id: defaultId }, ...(offered ?? [])];
  const seen = new Set<string>();
  return list.flatMap((m) => {
    if (seen.has(m.id)) return [];
    seen.add(m.id);
    return [{ id: m.id, label: m.label ?? m.id }];
  });
}

/**
 * The model of a turn. A lane's choice the binding does not offer (the offer changed since, or
 * another runtime's id) falls back to the default rather than reaching the provider.
 */
export function turnModel(
  defaultId: string,
  offered: readonly OfferedModel[] | undefined,
  chosen: string | undefined,
): string {
  return chosen !== undefined && (offered ?? []).some((m) => m.id === chosen) ? chosen : defaultId;
}

/** Whether `models` is a usable list; a `TypeError` for the binding to throw at creation otherwise. */
export function checkModelChoices(binding: string, models: unknown): void {
  if (models === undefined) return;
  if (
    Array.isArray(models) &&
    models.every((m) => m !== null && typeof m === "object" && typeof m.id === "string" && m.id !== "")
  )
    return;
  throw new TypeError(`${binding}: models must be a list of { id, label? } with non-empty ids`);
}
