import { memoryBus } from "chat-gateway";
import { describeBusConformance } from "chat-gateway/testing";

describeBusConformance("memory", () => memoryBus());
