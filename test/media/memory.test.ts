import { memoryMediaStore } from "chat-gateway/media/memory";
import { describeMediaStoreConformance } from "../conformance/media-store.js";

describeMediaStoreConformance("memory", () => memoryMediaStore());
