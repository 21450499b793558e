// A lease holder that writes to MariaDB, as a process of its own so that the tests can really pause it
// (SIGSTOP). It acquires through the SDK and keeps the token it was granted, then writes through the
// fencing helper whatever its lease says since, as a program that ignored its lease's signal would.
// Commands on stdin, one JSON answer per line on stdout:
//   acquire <resource> <ttl ms>    -> {"token": {...}}  (waits in line while the resource is held)
//   insert|update <id> <value>     -> the helper's outcome, e.g. {"status": "stale", "fence": "12"}
//   delete <id>                    -> the helper's outcome
//   bare-update <id> <value>       -> {"affectedRows": n}: the recipe's UPDATE by hand, without the helper
//   updates <id> <label> <n>       -> {"outcomes": [...]}: n updates one after the other, values <label>-0..
//   held                           -> {"held": boolean}
// Usage: my-holder.ts <fencekeeper url> <mysql2 options as JSON> <table>
import { createInterface } from "node:readline";
import mysql from "mysql2/promise";
import { FencekeeperClient, tokenToJson, type Lease, type TokenKey } from "../../client/index.js";
import { fencedDelete, fencedInsert, fencedUpdate } from "../../client/mariadb.js";

const [url, options, table] = process.argv.slice(2);
const client = new FencekeeperClient({ servers: url });
const db = mysql.createPool({ ...JSON.parse(options), connectionLimit: 1 });
let lease: Lease | undefined;
/** The server's token keys, so that the helper checks the token it writes under, as a program should. */
let keys: TokenKey[] = [];
const say = (o: unknown) => process.stdout.write(JSON.stringify(o, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, id, value, count] = line.trim().split(" ");
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
      const [res] = await db.execute<mysql.ResultSetHeader>(
        `UPDATE ${table} SET body = ?, fence_token = CAST(? AS SIGNED) WHERE id = ? AND fence_resource = CAST(? AS BINARY) AND fence_token <= CAST(? AS SIGNED)`,
        [value, String(t.generation), id, t.resource, String(t.generation)],
      );
      say({ affectedRows: res.affectedRows });
    } else if (cmd === "updates") {
      const outcomes: string[] = [];
      for (let i = 0; i < Number(count); i++) {
        outcomes.push((await fencedUpdate(db, { table, id, token: lease!.token, keys, set: { body: `${value}-${i}` } })).status);
      }
      say({ outcomes });
    } else if (cmd === "held") {
      say({ held: lease!.held });
    }
  } catch (err) {
    say({ error: String(err) });
  }
}
await db.end();
await client.close();
