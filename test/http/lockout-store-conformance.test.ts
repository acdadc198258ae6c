import { memoryLockoutStore } from "chat-gateway/login";
import { describeLockoutStoreConformance } from "chat-gateway/testing";

describeLockoutStoreConformance("memory", () => memoryLockoutStore());
