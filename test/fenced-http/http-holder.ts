// A lease holder that writes to a fenced HTTP service, as a process of its own so that the tests can
// really pause it (SIGSTOP). It acquires through the SDK, keeps the token it was granted, and sends it
// with every write whatever its lease says since, as a program that ignored its lease's signal would.
// Commands on stdin, one JSON answer per line on stdout:
//   acquire <resource> <ttl ms>   -> {"token": {...}}  (waits in line while the resource is held)
//   put <value>                   -> {"status": <HTTP status>, "body": <the answer's JSON>}
//   held                          -> {"held": boolean}
// Usage: http-holder.ts <fencekeeper url> <service url>
import { createInterface } from "node:readline";
import { FencekeeperClient, tokenToJson, type Lease } from "../../client/index.js";
import { fencingTokenHeader } from "../../client/fenced-http.js";

const [url, serviceUrl] = process.argv.slice(2);
const client = new FencekeeperClient({ servers: url });
let lease: Lease | undefined;
const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, arg, ttl] = line.trim().split(" ");
  try {
    if (cmd === "acquire") {
      lease = await client.acquire(arg, { ttl: Number(ttl), wait: true });
      say({ token: tokenToJson(lease.token) });
    } else if (cmd === "put") {
      const res = await fetch(`${serviceUrl}/items/${encodeURIComponent(lease!.token.resource)}`, {
        method: "PUT",
        headers: { "fencing-token": fencingTokenHeader(lease!.token) },
        body: arg,
      });
      say({ status: res.status, body: await res.json() });
    } else if (cmd === "held") {
      say({ held: lease!.held });
    }
  } catch (err) {
    say({ error: String(err) });
  }
}
await client.close();
