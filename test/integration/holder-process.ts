// A lease holder as a process of its own, driven line by line on stdin, answering in JSON on stdout:
//   acquire <resource> <ttl seconds> <holder>   -> {"token": {...}}
//   put <resource> <key> <value> [live]          -> {"ok": true, "fence": "..."} or {"code": ..., "reason": ...}
// The tests pause it with SIGSTOP and resume it with SIGCONT, as a scheduler pause would.
import { createInterface } from "node:readline";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../harness/clients.js";

const { lease, store } = clientsFor(process.argv[2]);
let token: FencingToken | undefined;
const say = (o: unknown) => process.stdout.write(JSON.stringify(o, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, ...args] = line.trim().split(" ");
  try {
    if (cmd === "acquire") {
      const res = await lease.acquire({ resource: args[0], ttl: { seconds: BigInt(args[1]), nanos: 0 }, holder: args[2] });
      token = res.token;
      say({ token });
    } else if (cmd === "put") {
      const res = await store.put({
        resource: args[0],
        key: args[1],
        value: Buffer.from(args[2]),
        mutation: { token, mode: args[3] === "live" ? FenceMode.LIVE : FenceMode.ORDER },
      });
      say({ ok: true, fence: res.commit!.fence });
    }
  } catch (err) {
    const e = ConnectError.from(err);
    say({ code: Code[e.code], reason: e.findDetails(ErrorInfoSchema)[0]?.reason, message: e.rawMessage });
  }
}
