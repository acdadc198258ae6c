import { memoryLaneLock } from "chat-gateway";
import { describeLaneLockConformance } from "chat-gateway/testing";

describeLaneLockConformance("memory", () => memoryLaneLock());
