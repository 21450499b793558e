// A server whose log goes nowhere must still shut down (issue 8, item 8). Started as
// `node server/main.ts ... 2>&1 | head -3`: once `head` has gone, stdout is a closed pipe and every log
// line fails with EPIPE; with a reader that has stopped reading, the pipe is full. Neither may stop or
// block a shutdown, and a second SIGTERM or SIGINT ends the process at once (exit code 1).
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { request } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ConnectError } from "@connectrpc/connect";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { SERVER_COMMAND } from "../harness/server.js";
import { eventually, sleep, uniqueResource, within } from "../harness/suite.js";
import { freePort } from "../../server/etcd/embedded.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

interface PipedServer {
  child: ChildProcess;
  port: number;
  clients: Clients;
  /** Resolves with the exit code, or the signal's name if a signal ended the process. */
  exited: Promise<number | string>;
  /** What `head -3` passed on, and whether it has gone. */
  lines: string[];
  headGone: boolean;
}

/**
 * The server with stdout and stderr on one pipe, as `2>&1 |` makes it, read by `head -3` (which leaves
 * after three lines) or by nobody at all (after what Node buffers on our side, the pipe is full).
 */
async function startPiped(etcd: string, reader: "head" | "stalled", args: string[] = []): Promise<PipedServer> {
  const port = await freePort();
  const serverArgs = [...SERVER_COMMAND, "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off"];
  serverArgs.push("--etcd", etcd, "--prefix", `/fk-log-pipe-${randomBytes(4).toString("hex")}/`, ...args);
  // exec: the pid is the server's own, so that signals reach it and not a shell.
  const script = reader === "head" ? 'exec "$@" > >(exec head -3) 2>&1' : 'exec "$@" 2>&1';
  const child = spawn("bash", ["-c", script, "bash", ...serverArgs], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  const server: PipedServer = { child, port, clients: clientsFor(`http://127.0.0.1:${port}`), exited, lines: [], headGone: false };
  if (reader === "head") {
    // head's output comes to us; its end means head has gone.
    const rl = createInterface({ input: child.stdout! });
    rl.on("line", (line) => server.lines.push(line));
    void once(rl, "close").then(() => (server.headGone = true));
  }
  let early: number | string | undefined;
  void exited.then((code) => (early = code));
  await eventually(
    async () => {
      if (early !== undefined) throw new Error(`the server exited with ${early} before serving`);
      return (await describeOnce(port, "ready")) === 200;
    },
    "the server answers",
    30_000,
  );
  await sleep(100); // the connection of the last call is closed
  return server;
}

/**
 * Describe over Connect JSON on HTTP/1.1, on a connection of its own that closes afterwards: the calls
 * that only make log lines leave no connection open for the shutdown to wait for. Resolves with the HTTP
 * status, 0 when the server does not answer.
 */
function describeOnce(port: number, resource: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ port, host: "127.0.0.1", method: "POST", path: "/fencekeeper.v1.LeaseService/Describe", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
    req.end(JSON.stringify({ resource }));
  });
}

/** A caller's mistake is logged at info: one line per call. */
const logOneLine = (s: PipedServer) => describeOnce(s.port, "");

/** The exit code (or signal), or "still running" once ms have passed. */
function exitsWithin(server: PipedServer, ms: number): Promise<number | string> {
  return within(server.exited, ms, "still running" as const);
}

describe("a server whose log pipe is broken or full", () => {
  let etcd: TestEtcd;
  const started: PipedServer[] = [];

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
  });
  afterEach(() => {
    for (const s of started.splice(0)) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
  });
  after(async function () {
    this.timeout(30_000);
    await etcd?.destroy();
  });

  async function start(reader: "head" | "stalled", args: string[] = []) {
    const server = await startPiped(etcd.endpoint, reader, args);
    started.push(server);
    return server;
  }

  /** One line at a time until head has had its three and gone. */
  async function untilHeadGone(server: PipedServer) {
    await eventually(async () => server.headGone || (await logOneLine(server), false), "head took three lines and left", 10_000);
    expect(server.lines).to.have.length(3);
  }

  /** Far more log than the pipe and Node's buffer on the reading side hold. */
  async function fillPipe(server: PipedServer) {
    for (let i = 0; i < 40; i++) await Promise.all(Array.from({ length: 50 }, () => logOneLine(server)));
  }

  /** An Acquire waiting in line, which a shutdown lets finish within its grace period. */
  async function withWaiter(server: PipedServer): Promise<{ waiter: Promise<unknown> }> {
    const resource = uniqueResource("log-pipe");
    await server.clients.lease.acquire({ resource, ttl: ttl(30), holder: "holder" });
    const waiter = server.clients.lease.acquire({ resource, ttl: ttl(30), holder: "waiter", wait: true }).catch((e: unknown) => e);
    await eventually(async () => (await server.clients.lease.describe({ resource })).waiters === 1, "the waiter is in line");
    return { waiter };
  }

  it("exits 0 on SIGTERM when head leaves during the shutdown (`2>&1 | head -3`, as in the issue)", async function () {
    this.timeout(60_000);
    const server = await start("head");
    server.child.kill("SIGTERM");
    expect(await exitsWithin(server, 5_000)).to.equal(0);
  });

  it("exits 0 on SIGTERM after head has gone", async function () {
    this.timeout(60_000);
    const server = await start("head");
    await untilHeadGone(server);
    server.child.kill("SIGTERM");
    expect(await exitsWithin(server, 5_000)).to.equal(0);
  });

  it("exits 0 on SIGTERM while nobody reads its log", async function () {
    this.timeout(60_000);
    const server = await start("stalled");
    await fillPipe(server);
    server.child.kill("SIGTERM");
    expect(await exitsWithin(server, 5_000)).to.equal(0);
  });

  it("ends at once, exit code 1, on a second SIGTERM while the shutdown waits for an Acquire (head gone)", async function () {
    this.timeout(60_000);
    const server = await start("head", ["--shutdown-grace", "60000"]);
    await untilHeadGone(server);
    const { waiter } = await withWaiter(server);
    server.child.kill("SIGTERM");
    // The shutdown is under way: it waits for the Acquire in flight.
    expect(await exitsWithin(server, 1_000)).to.equal("still running");
    server.child.kill("SIGTERM");
    expect(await exitsWithin(server, 2_000)).to.equal(1);
    expect(await waiter).to.be.instanceOf(ConnectError);
  });

  it("ends at once, exit code 1, on SIGINT after SIGTERM while the shutdown waits for an Acquire (log not read)", async function () {
    this.timeout(60_000);
    const server = await start("stalled", ["--shutdown-grace", "60000"]);
    await fillPipe(server);
    const { waiter } = await withWaiter(server);
    server.child.kill("SIGTERM");
    expect(await exitsWithin(server, 1_000)).to.equal("still running");
    server.child.kill("SIGINT");
    expect(await exitsWithin(server, 2_000)).to.equal(1);
    expect(await waiter).to.be.instanceOf(ConnectError);
  });
});
