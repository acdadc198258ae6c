/**
 * `GET /v1/models` and `GET /v1/models/{id}` (docs/PROTOCOL.md §19): the owner's channels as models.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { listModels, type ChannelModel } from "./channel-models.js";
import type { DoorContext } from "./door-context.js";
import { openDoorSession } from "./door-session.js";
import { DoorError, sendJson } from "./openai-errors.js";

function modelObject(model: ChannelModel): Record<string, unknown> {
  return { id: model.id, object: "model", created: 0, owned_by: "chat-gateway" };
}

/** Lists the models, or answers one by id (`only`). */
export async function models(
  ctx: DoorContext,
  req: IncomingMessage,
  res: ServerResponse,
  only?: string,
): Promise<void> {
  const { device, owner } = await openDoorSession(ctx, req, "openai");
  try {
    const all = await listModels({ storage: ctx.storage, owner });
    if (only === undefined) {
      sendJson(res, 200, { object: "list", data: all.map(modelObject) });
      return;
    }
    const found = all.find((m) => m.id === only);
    if (!found)
      throw new DoorError(
        404,
        "not_found_error",
        `the model "${only.slice(0, 100)}" does not exist`,
        "model_not_found",
      );
    sendJson(res, 200, modelObject(found));
  } finally {
    device.close();
  }
}
