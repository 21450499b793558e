// Observe streams whose readers never read (docs/budgets.md, "Answers and slow readers"): ten raw
// HTTP/2 streams, paused, so that their client takes nothing and HTTP/2 flow control stops the server
// writing, while a holder proclaims 80 values of 1 MiB. The server keeps at most its stream backlog
// for them, not every change: its memory stays flat (before, 100 values grew it by 560 MiB). A reader that then
// reads gets the changes it had room for, then the state now, marked missed_changes, and the stream
// goes on.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { ObserveRequestSchema, ObserveResponseSchema, type ObserveResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { frame } from "../harness/wire.js";
import { eventually, uniqueResource, useServer } from "../harness/suite.js";

const MiB = 1024 * 1024;
const STREAMS = 10;
const PROCLAIMS = 80;
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const valueOf = (i: number) => {
  const v = Buffer.alloc(MiB, 0x61);
  v.write(`value-${i}.`);
  return new Uint8Array(v);
};
const nameOf = (v: Uint8Array) => Buffer.from(v.subarray(0, 32)).toString().split(".")[0];

/** The server's resident memory, in bytes, as Linux counts it. */
function rss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

/** An Observe stream over raw HTTP/2 whose client reads nothing until told. */
function stalledObserve(session: http2.ClientHttp2Session, resource: string): { stream: http2.ClientHttp2Stream; responded: Promise<void> } {
  const stream = session.request({ ":method": "POST", ":path": "/fencekeeper.v1.LeaseService/Observe", "content-type": "application/grpc", te: "trailers" });
  stream.end(frame(toBinary(ObserveRequestSchema, create(ObserveRequestSchema, { resource }))));
  // No 'data' listener, never resumed: the stream's buffer fills, and the client stops granting window.
  stream.pause();
  const responded = new Promise<void>((resolve, reject) => {
    stream.once("response", () => resolve());
    stream.once("error", reject);
  });
  return { stream, responded };
}

/** Reads a stream's gRPC messages from now on; next() resolves with each in turn. */
function reader(stream: http2.ClientHttp2Stream): { next(): Promise<ObserveResponse> } {
  const got: ObserveResponse[] = [];
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  let failed: Error | undefined;
  stream.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 5 && buffered.length >= 5 + buffered.readUInt32BE(1)) {
      const length = buffered.readUInt32BE(1);
      got.push(fromBinary(ObserveResponseSchema, buffered.subarray(5, 5 + length)));
      buffered = buffered.subarray(5 + length);
    }
    wake?.();
  });
  const fail = (err: Error) => ((failed = err), wake?.());
  stream.once("error", fail);
  stream.once("end", () => fail(new Error("the stream ended")));
  stream.resume();
  return {
    async next() {
      while (got.length === 0) {
        if (failed) throw failed;
        await new Promise<void>((resolve) => (wake = resolve));
      }
      return got.shift()!;
    },
  };
}

describe("Observe streams whose readers never read are bounded, and their readers told they missed changes", function () {
  this.timeout(300_000);
  // Megabytes of values in seconds, on purpose: the caller's history budget (docs/budgets.md, tested in
  // budgets.test.ts) is off, so that what is measured here is the answers' and the streams' own bounds.
  const s = useServer(["--max-history-bytes-per-second", "0"]);

  it(`${STREAMS} stalled raw HTTP/2 readers while a holder proclaims ${PROCLAIMS} values of 1 MiB: server memory stays flat; a reader that reads again gets missed_changes and the last value`, async () => {
    const resource = uniqueResource("stalled-readers");
    // A small first value: the first message (the state at the start) reaches the client whole, within
    // its flow-control window, and what follows is what the server must keep or drop.
    const { token } = await s.lease.acquire({ resource, ttl: ttl(120), holder: "leader", value: new TextEncoder().encode("value-0.") });
    const session = http2.connect(s.server.url);
    try {
      const streams = Array.from({ length: STREAMS }, () => stalledObserve(session, resource));
      await Promise.all(streams.map((x) => x.responded));
      // Each stalled client holds its first message, unread, in its buffer.
      await eventually(() => streams.every((x) => x.stream.readableLength > 0), "every stream's first message arrived", 30_000);
      const pid = s.server.process.pid!;
      const before = rss(pid);
      let peak = before;
      for (let i = 1; i <= PROCLAIMS; i++) {
        await s.lease.proclaim({ token, value: valueOf(i) });
        if (i % 10 === 0) peak = Math.max(peak, rss(pid));
      }
      // What the server keeps for the stalled readers is kept until they read: it is there now.
      const after = rss(pid);
      peak = Math.max(peak, after);
      const grew = peak - before;
      console.log(`      server RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peak / MiB)} MiB, ${Math.round(after / MiB)} MiB after ${PROCLAIMS} proclaims`);
      // Unbounded, each stream would keep every change: STREAMS x PROCLAIMS MiB (800 MiB).
      expect(grew, `the server's memory grew by ${Math.round(grew / MiB)} MiB`).to.be.below(250 * MiB);

      // One reader reads again: the messages it had room for, then the state now, marked.
      const seen: ObserveResponse[] = [];
      const last = `value-${PROCLAIMS}`;
      const first = reader(streams[0].stream);
      for (;;) {
        const o = await first.next();
        seen.push(o);
        if (nameOf(o.value) === last) break;
      }
      expect(seen.length, "fewer messages than changes: the backlog was dropped").to.be.below(PROCLAIMS);
      const marked = seen.filter((o) => o.missedChanges);
      expect(marked.length, "one message says changes were missed").to.be.at.least(1);
      expect(nameOf(seen[seen.length - 1].value)).to.equal(last);
      expect(seen[seen.length - 1].token!.generation).to.equal(token!.generation);
      // The revisions still only go up.
      for (let i = 1; i < seen.length; i++) expect(seen[i].revision > seen[i - 1].revision).to.equal(true);

      // The stream goes on: the next change reaches it.
      await s.lease.proclaim({ token, value: valueOf(PROCLAIMS + 1) });
      const next = await first.next();
      expect(nameOf(next.value)).to.equal(`value-${PROCLAIMS + 1}`);
      expect(next.missedChanges).to.equal(false);
      // And the server serves everyone else meanwhile.
      expect((await s.lease.describe({ resource })).held).to.equal(true);
      for (const x of streams) x.stream.close(http2.constants.NGHTTP2_CANCEL);
    } finally {
      session.destroy();
    }
  });
});
