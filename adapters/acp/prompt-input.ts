// An ACP prompt as a gateway message (docs/PROTOCOL.md §20): text blocks joined, resource links
// and embedded text resources as text, images uploaded as media.
import { RequestError, type ContentBlock } from "@agentclientprotocol/sdk";
import type { GatewayClient } from "chat-gateway/client";

/** What `message.send` gets from one prompt. */
export interface PromptMessage {
  text: string;
  media_refs: string[];
}

/** One block as the text a person would have typed, or undefined for media. */
function blockText(block: ContentBlock): string | undefined {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource_link":
      return `[${block.title ?? block.name}](${block.uri})`;
    case "resource":
      return "text" in block.resource
        ? `${block.resource.uri}:\n${block.resource.text}`
        : `[${block.resource.uri}] (${block.resource.mimeType ?? "binary"})`;
    default:
      return undefined;
  }
}

/** Builds the message, uploading each image first (a media ref goes with exactly one message). */
export async function promptMessage(client: GatewayClient, prompt: ContentBlock[]): Promise<PromptMessage> {
  const texts: string[] = [];
  const media_refs: string[] = [];
  for (const [index, block] of prompt.entries()) {
    const text = blockText(block);
    if (text !== undefined) {
      texts.push(text);
      continue;
    }
    if (block.type !== "image") throw RequestError.invalidParams(undefined, `a ${block.type} prompt is not supported`);
    const bytes = Buffer.from(block.data, "base64");
    const extension = block.mimeType.split("/")[1] ?? "bin";
    const ref = await client.upload(bytes, {
      mime: block.mimeType,
      kind: "image",
      filename: `image-${index + 1}.${extension}`,
    });
    media_refs.push(ref.media_id);
  }
  return { text: texts.join("\n\n"), media_refs };
}
