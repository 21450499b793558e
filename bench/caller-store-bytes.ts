// What charging a principal's ledger costs a write (--max-store-bytes-per-caller, docs/budgets.md): the
// same fenced Puts (100-byte values, JWT-authenticated, one principal) through two servers on one etcd,
// one with the budget on (its default) and one with it off (0), in alternating rounds of one run; the
// table gives both and their ratio. Writers write (a) 64 resources (writer w writes resource w % 64, so
// the writes of one request charge one ledger together) and (b) one resource.
//
//   node --import tsx bench/caller-store-bytes.ts [--seconds 5] [--rounds 2] [--writers 64]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { startEmbeddedEtcd } from "../server/etcd/embedded.js";
import { startServer, type TestServer } from "../test/harness/server.js";
import { merge, sample, summarize, type Samples } from "./measure.js";
import { ms, num, ratio, Table } from "./report.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "5" }, rounds: { type: "string", default: "2" }, writers: { type: "string", default: "64" } } });
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const WRITERS = Number(values.writers);
const VALUE = Buffer.alloc(100, "v");

const dir = mkdtempSync(join(tmpdir(), "fencekeeper-bench-caller-store-"));
const etcd = await startEmbeddedEtcd({ dataDir: join(dir, "etcd") });
const { publicKey, privateKey } = await generateKeyPair("ES256");
writeFileSync(join(dir, "jwt.pem"), await exportSPKI(publicKey));
const jwtArgs = ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", "https://issuer.test", "--jwt-audience", "fencekeeper", "--max-history-bytes-per-second", "0"];
const servers: Record<"on" | "off", TestServer> = {
  on: await startServer({ etcd: etcd.endpoint, args: jwtArgs }),
  off: await startServer({ etcd: etcd.endpoint, args: [...jwtArgs, "--max-store-bytes-per-caller", "0"] }),
};

async function clients(server: TestServer) {
  const jwt = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("bench").setIssuer("https://issuer.test").setAudience("fencekeeper").setExpirationTime("1h").sign(privateKey);
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${jwt}`);
    return next(req);
  };
  const transport = createGrpcTransport({ baseUrl: server.url, interceptors: [bearer] });
  return { lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) };
}

try {
  const table = new Table(`fenced Put, 100-byte values, ${WRITERS} writers, one principal (JWT), ${ROUNDS} alternating rounds of ${SECONDS} s each`, [
    { title: "writes", width: 16, left: true },
    { title: "budget", width: 6, left: true },
    { title: "puts/s", width: 8 },
    { title: "p50 ms", width: 7 },
    { title: "p99 ms", width: 7 },
    { title: "on / off", width: 8 },
  ]);
  for (const [name, count] of [
    ["(a) 64 resources", 64],
    ["(b) 1 resource", 1],
  ] as const) {
    const by: Record<"on" | "off", Samples[]> = { on: [], off: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of ["off", "on"] as const) {
        const c = await clients(servers[which]);
        const resources: { resource: string; token: FencingToken }[] = await Promise.all(
          Array.from({ length: count }, async (_, k) => {
            const resource = `bench-caller-store-${which}-${round}-${count}-${k}`;
            const { token } = await c.lease.acquire({ resource, ttl: { seconds: 120n, nanos: 0 } });
            return { resource, token: token! };
          }),
        );
        by[which].push(
          await sample({
            workers: WRITERS,
            seconds: SECONDS,
            op: (w, i) => {
              const r = resources[w % resources.length];
              return c.store.put({ resource: r.resource, key: `w${w}-${i % 16}`, value: VALUE, mutation: { token: r.token } });
            },
          }),
        );
      }
    }
    const off = summarize(WRITERS, merge(by.off));
    const on = summarize(WRITERS, merge(by.on));
    for (const [which, m] of [
      ["off", off],
      ["on", on],
    ] as const) {
      if (m.errors > 0) console.error(`${name}, budget ${which}: ${m.errors} errors, the first: ${m.firstError}`);
      table.row([name, which, num(m.perSecond), ms(m.p50Ms), ms(m.p99Ms), which === "on" ? ratio(on.perSecond / off.perSecond) : ""]);
    }
  }
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  await etcd.stop();
  rmSync(dir, { recursive: true, force: true });
}
