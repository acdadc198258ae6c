import { memorySessionStore } from "chat-gateway/http";
import { describeSessionStoreConformance } from "chat-gateway/testing";

describeSessionStoreConformance("memory", () => memorySessionStore());
