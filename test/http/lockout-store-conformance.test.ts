import { memoryLockoutStore } from "chat-gateway/http";
import { describeLockoutStoreConformance } from "chat-gateway/testing";

describeLockoutStoreConformance("memory", () => memoryLockoutStore());
