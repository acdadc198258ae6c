import { memoryStorage } from "chat-gateway/storage/memory";
import { describeStorageConformance } from "chat-gateway/testing";

describeStorageConformance("memory", async () => ({ storage: memoryStorage() }));
