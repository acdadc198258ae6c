import { memoryMediaStore } from "chat-gateway/media/memory";
import { describeMediaStoreConformance } from "chat-gateway/testing";

describeMediaStoreConformance("memory", () => memoryMediaStore());
