// The embedded etcd's ports: picked distinct, and a start that fails on a port in use says so in etcd's
// own words (the harness's etcd log is in a temporary folder, gone by the time a CI run is read).
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { freePorts, startEmbeddedEtcd } from "../../server/etcd/embedded.js";

describe("embedded etcd: its ports", function () {
  this.timeout(30_000);
  let dir: string;
  let taken: Server | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-etcd-ports-"));
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => (taken ? taken.close(() => resolve()) : resolve()));
    taken = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it("picks ports that are distinct and free", async () => {
    const ports = await freePorts(8);
    expect(new Set(ports).size).to.equal(8);
    for (const p of ports) expect(p).to.be.greaterThan(0);
  });

  it("a client port in use: the error quotes etcd, which names the port", async () => {
    const [port] = await freePorts(1);
    taken = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => taken!.listen(port, "127.0.0.1", () => resolve()));
    let error: Error | undefined;
    await startEmbeddedEtcd({ dataDir: dir, clientPort: port }).then(
      async (etcd) => etcd.stop(),
      (e: Error) => (error = e),
    );
    expect(error?.message).to.match(/etcd exited at start/).and.match(/address already in use/).and.contain(String(port));
  });
});
