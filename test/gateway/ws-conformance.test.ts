import { describeConnectionConformance, webSocketClient } from "chat-gateway/testing";
import { listenWebSocket } from "chat-gateway/ws";

describeConnectionConformance("ws", async (gateway) => {
  const transport = await listenWebSocket(gateway, { port: 0, host: "127.0.0.1" });
  return { connect: () => webSocketClient(transport.url), close: () => transport.close() };
});
