// One etcd and one server (or several replicas on one prefix) for a describe block, started before its
// tests and stopped after.
import { randomBytes } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import { Etcd3 } from "etcd3";
import { KeyLayout } from "../../server/etcd/keys.js";
import { startEtcd, type TestEtcd } from "./etcd.js";
import { startServer, type TestServer } from "./server.js";
import { clientsFor, type Clients } from "./clients.js";

export interface Suite extends Clients {
  etcd: TestEtcd;
  server: TestServer;
}

/** Call inside describe(): the returned object is filled in by before() and emptied by after(). */
export function useServer(args: string[] = []): Suite {
  const suite = {} as Suite;
  before(async function () {
    this.timeout(60_000);
    suite.etcd = await startEtcd();
    suite.server = await startServer({ etcd: suite.etcd.endpoint, args });
    Object.assign(suite, clientsFor(suite.server.url));
  });
  after(async function () {
    this.timeout(30_000);
    await suite.server?.stop();
    await suite.etcd?.destroy();
  });
  return suite;
}

export interface Replicas {
  etcd: TestEtcd;
  /** The replicas, all on one key prefix of the one etcd. */
  servers: TestServer[];
  /** A client of etcd itself, to read what the replicas wrote (through layout). */
  direct: Etcd3;
  layout: KeyLayout;
}

/**
 * Call inside describe(): count replicas on one prefix of one etcd, with a direct etcd client beside
 * them. args: the servers' arguments, or a function of nothing that gives them when they start (after
 * the describe's earlier before() hooks, such as a TestIssuer's).
 */
export function useReplicas(count: number, args: string[] | (() => string[]) = []): Replicas {
  const r = {} as Replicas;
  before(async function () {
    this.timeout(60_000);
    r.etcd = await startEtcd();
    const prefix = `/fk-replicas-${randomBytes(4).toString("hex")}/`;
    r.layout = new KeyLayout(prefix);
    const given = typeof args === "function" ? args() : args;
    r.servers = await Promise.all(Array.from({ length: count }, () => startServer({ etcd: r.etcd.endpoint, prefix, args: given })));
    r.direct = new Etcd3({ hosts: r.etcd.endpoint });
  });
  after(async function () {
    this.timeout(30_000);
    r.direct?.close();
    await Promise.all((r.servers ?? []).map((s) => s.stop()));
    await r.etcd?.destroy();
  });
  return r;
}

/** A resource name of its own for each test. */
let counter = 0;
export const uniqueResource = (name: string) => `${name}-${process.pid}-${++counter}`;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * p's outcome, or otherwise if p has not settled within ms. The timer goes with the race: a bare
 * Promise.race with sleep() would leave it running for the rest of its time, holding the process open.
 */
export function within<T, F>(p: Promise<T>, ms: number, otherwise: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => (timer = setTimeout(() => resolve(otherwise), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Polls until check() is true or timeoutMs passes; fails with message. */
export async function eventually(check: () => Promise<boolean> | boolean, message: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${message}`);
    await sleep(50);
  }
}

/** The ConnectError a call failed with; throws if it succeeded. */
export async function failure(call: Promise<unknown>): Promise<ConnectError> {
  const outcome = await call.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );
  if (!outcome) throw new Error("expected the call to fail, and it succeeded");
  return outcome;
}
