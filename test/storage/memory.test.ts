import { memoryStorage } from "chat-gateway/storage/memory";
import { describeStorageConformance } from "../conformance/storage.js";

describeStorageConformance("memory", async () => ({ storage: memoryStorage() }));
