// The unit tier's leak check (test/harness/no-leaks.ts) names what a test leaves open.
import { expect } from "chai";
import net from "node:net";
import { leftOpen } from "../harness/no-leaks.js";

describe("the leak check of a tier that ends by itself", () => {
  it("names a server and a timer left open, and nothing once they are closed", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const timer = setInterval(() => {}, 60_000);
    try {
      const open = leftOpen().join("; ");
      expect(open).to.match(/\b1 TCPServerWrap\b/);
      expect(open).to.match(/\d+ Timeout\b/);
      expect(open).to.include(`"port":${port}`);
    } finally {
      clearInterval(timer);
      await new Promise((resolve) => server.close(resolve));
    }
    expect(leftOpen().join("; ")).not.to.include(`"port":${port}`);
  });
});
