// A lease holder that writes to PostgreSQL, as a process of its own so that the tests can really pause it
// (SIGSTOP). It acquires through the SDK and keeps the token it was granted, then writes through the
// fencing helper whatever its lease says since, as a program that ignored its lease's signal would.
// Commands on stdin, one JSON answer per line on stdout:
//   acquire <resource> <ttl ms>    -> {"token": {...}}  (waits in line while the resource is held)
//   insert|update <id> <value>     -> the helper's outcome, e.g. {"status": "stale", "fence": "12"}
//   delete <id>                    -> the helper's outcome
//   bare-update <id> <value>       -> {"rowCount": n}: the recipe's UPDATE by hand, without the helper
//   held                           -> {"held": boolean}
// Usage: pg-holder.ts <fencekeeper url> <postgres url> <table>
import { createInterface } from "node:readline";
import pg from "pg";
import { FencekeeperClient, fencedDelete, fencedInsert, fencedUpdate, tokenToJson, type Lease, type TokenKey } from "../../client/index.js";

const [url, pgUrl, table] = process.argv.slice(2);
const client = new FencekeeperClient({ servers: url });
const db = new pg.Pool({ connectionString: pgUrl, max: 1 });
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
      const write = cmd === "insert" ? fencedInsert : fencedUpdate;
      say(await write(db, { table, id, token: lease!.token, keys, set: { body: value } }));
    } else if (cmd === "delete") {
      say(await fencedDelete(db, { table, id, token: lease!.token, keys }));
    } else if (cmd === "bare-update") {
      const t = lease!.token;
      const res = await db.query(
        `UPDATE ${table} SET body = $3, fence_token = $4 WHERE id = $1 AND fence_resource = $2 AND fence_token <= $4`,
        [id, t.resource, value, String(t.generation)],
      );
      say({ rowCount: res.rowCount });
    } else if (cmd === "held") {
      say({ held: lease!.held });
    }
  } catch (err) {
    say({ error: String(err) });
  }
}
await db.end();
await client.close();
