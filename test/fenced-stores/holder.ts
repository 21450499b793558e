// A lease holder that writes to a fenced store (test/fenced-stores/adapters.ts), as a process of its own so
// that the tests can really pause it (SIGSTOP). It acquires through the SDK and keeps the token it was
// granted, then writes through the store's fencing helper whatever its lease says since, as a program
// that ignored its lease's signal would. Commands on stdin, one JSON answer per line on stdout:
//   acquire <resource> <ttl ms>    -> {"token": {...}}  (waits in line while the resource is held)
//   insert|update <id> <value>     -> the helper's outcome, e.g. {"status": "stale", "fence": "12"}
//   delete <id>                    -> the helper's outcome
//   <more> <id> <value>            -> the outcome of a write only this store has (Redis: hset, multi)
//   bare-update <id> <value>       -> {"rows": n}: the recipe's UPDATE by hand, without the helper
//   held                           -> {"held": boolean}
// Usage: holder.ts <fencekeeper url> <store address as JSON>
import { createInterface } from "node:readline";
import { FencekeeperClient, tokenToJson, type Lease, type TokenKey } from "../../client/index.js";
import { connect, type StoreAddress } from "./adapters.js";

const [url, address] = process.argv.slice(2);
const client = new FencekeeperClient({ servers: url });
const store = connect(JSON.parse(address) as StoreAddress);
let lease: Lease | undefined;
/** The server's token keys, so that the helper checks the token it writes under, as a program should. */
let keys: TokenKey[] = [];
const say = (o: unknown) => process.stdout.write(JSON.stringify(o, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, id, value] = line.trim().split(" ");
  try {
    if (cmd === "acquire") {
      lease = await client.acquire(id, { ttl: Number(value), wait: true });
      keys = await client.tokenKeys();
      say({ token: tokenToJson(lease.token) });
    } else if (cmd === "insert" || cmd === "update") {
      say(await store[cmd](lease!.token, id, value, keys));
    } else if (cmd === "delete") {
      say(await store.delete(lease!.token, id, keys));
    } else if (cmd in store.more) {
      say(await store.more[cmd](lease!.token, id, value, keys));
    } else if (cmd === "bare-update") {
      say({ rows: await store.bare!(lease!.token, id, value) });
    } else if (cmd === "held") {
      say({ held: lease!.held });
    } else {
      say({ error: `unknown command ${cmd}` });
    }
  } catch (err) {
    say({ error: String(err) });
  }
}
await store.close();
await client.close();
