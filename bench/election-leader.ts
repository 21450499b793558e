// A leader for the election bench's crash rows, in a process of its own so that it can die without a
// word (SIGKILL): it campaigns with the SDK or with etcd3's election(), prints "elected" once it leads,
// then keeps leading (renewing) until killed.
// Usage: election-leader.ts sdk <server-url> <resource> <ttl-s> | etcd3 <etcd-endpoint> <name> <ttl-s>
import { Etcd3 } from "etcd3";
import { FencekeeperClient } from "../client/index.js";

const [mode, target, name, ttl] = process.argv.slice(2);
if (mode === "sdk") {
  const fk = new FencekeeperClient({ servers: target, holder: "crashing-leader" });
  await fk.campaign(name, "crashing-leader", { ttl: Number(ttl) * 1000 });
} else {
  const etcd = new Etcd3({ hosts: target });
  await etcd.election(name, Number(ttl)).campaign("crashing-leader").wait();
}
process.stdout.write("elected\n");
setInterval(() => undefined, 60_000);
