// A lease holder that writes to Redis, as a process of its own so that the tests can really pause it
// (SIGSTOP). It acquires through the SDK and keeps the token it was granted, then writes through the
// fencing helpers whatever its lease says since, as a program that ignored its lease's signal would.
// Commands on stdin, one JSON answer per line on stdout:
//   acquire <resource> <ttl ms>    -> {"token": {...}}  (waits in line while the resource is held)
//   set <key> <value>              -> the helper's outcome, e.g. {"status": "stale", "fence": "12"}
//   del <key>                      -> the helper's outcome
//   hset <key> <field> <value>     -> the helper's outcome
//   multi <key> <value>            -> the helper's outcome: SET <key> <value> and HSET <key>:h f <value>, in one script
//   held                           -> {"held": boolean}
// Usage: redis-holder.ts <fencekeeper url> <redis port>
import { createInterface } from "node:readline";
import { Redis } from "ioredis";
import { FencekeeperClient, tokenToJson, type Lease, type TokenKey } from "../../client/index.js";
import { fencedDel, fencedHset, fencedMulti, fencedSet } from "../../client/redis.js";

const [url, port] = process.argv.slice(2);
const client = new FencekeeperClient({ servers: url });
const redis = new Redis({ host: "127.0.0.1", port: Number(port), maxRetriesPerRequest: 1 });
let lease: Lease | undefined;
/** The server's token keys, so that the helper checks the token it writes under, as a program should. */
let keys: TokenKey[] = [];
const say = (o: unknown) => process.stdout.write(JSON.stringify(o, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, a, b, c] = line.trim().split(" ");
  try {
    if (cmd === "acquire") {
      lease = await client.acquire(a, { ttl: Number(b), wait: true });
      keys = await client.tokenKeys();
      say({ token: tokenToJson(lease.token) });
    } else if (cmd === "set") {
      say(await fencedSet(redis, { key: a, value: b, token: lease!.token, keys }));
    } else if (cmd === "del") {
      say(await fencedDel(redis, { key: a, token: lease!.token, keys }));
    } else if (cmd === "hset") {
      say(await fencedHset(redis, { key: a, fields: { [b]: c }, token: lease!.token, keys }));
    } else if (cmd === "multi") {
      say(await fencedMulti(redis, { ops: [{ set: a, value: b }, { hset: `${a}:h`, fields: { f: b } }], token: lease!.token, keys }));
    } else if (cmd === "held") {
      say({ held: lease!.held });
    }
  } catch (err) {
    say({ error: String(err) });
  }
}
await redis.quit();
await client.close();
