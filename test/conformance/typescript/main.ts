// The TypeScript conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls
// that let the conformance test run it against the other languages' clients. --library chooses the gRPC
// library: connect (@connectrpc/connect) or grpc-js (@grpc/grpc-js).
//   node --import tsx test/conformance/typescript/main.ts <command> --library connect|grpc-js --server URL --resource R ...
import { parseArgs } from "node:util";
import type { Library } from "./api.js";
import { connectLibrary } from "./connect.js";
import { grpcJsLibrary } from "./grpc-js.js";
import { runScenario, Unexpected } from "./scenario.js";

const USAGE = `usage: main.ts scenario|acquire|put|get|release --library connect|grpc-js --server http://host:port --resource R [flags]
  scenario                                  run the whole scenario of SCENARIO.md
  acquire  --holder H [--ttl SECONDS]       print the token
  put      --key K --value V --generation G --lease-id L
  get      --key K
  release  --generation G --lease-id L`;

const libraries: Record<string, Library> = { connect: connectLibrary, "grpc-js": grpcJsLibrary };

function usage(): never {
  console.error(USAGE);
  process.exit(2);
}

async function singleCall(library: Library, command: string, f: Record<string, string>): Promise<Record<string, unknown>> {
  const api = library.connect(f.server);
  const token = { resource: f.resource, generation: BigInt(f.generation), leaseId: BigInt(f["lease-id"]) };
  try {
    switch (command) {
      case "acquire": {
        const res = await api.acquire({ resource: f.resource, ttl: { seconds: BigInt(f.ttl) }, holder: f.holder });
        return { ok: true, generation: String(res.token!.generation), lease_id: String(res.token!.leaseId) };
      }
      case "put": {
        const res = await api.put({ resource: f.resource, key: f.key, value: new TextEncoder().encode(f.value), mutation: { token } });
        return { ok: true, fence: String(res.commit!.fence) };
      }
      case "get": {
        const res = await api.get({ resource: f.resource, key: f.key });
        return { ok: true, found: res.found, value: new TextDecoder().decode(res.value) };
      }
      case "release":
        await api.release({ token });
        return { ok: true };
      default:
        usage();
    }
  } catch (error) {
    const failure = library.failureOf(error);
    if (!failure) throw error;
    return { ok: false, code: failure.code, reason: failure.reason };
  } finally {
    api.close();
  }
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: Object.fromEntries(
        ["library", "server", "resource", "holder", "ttl", "key", "value", "generation", "lease-id"].map((n) => [n, { type: "string" as const }]),
      ),
    }));
  } catch {
    usage();
  }
  const library = libraries[values.library ?? ""];
  if (!library || !values.server || !values.resource) usage();
  const flags = { holder: library.name, ttl: "2", key: "", value: "", generation: "0", "lease-id": "0", ...values } as Record<string, string>;

  if (command === "scenario") {
    try {
      await runScenario(library, flags.server, flags.resource);
      return 0;
    } catch (error) {
      if (!(error instanceof Unexpected) && !library.failureOf(error)) throw error;
      console.error(`FAIL ${(error as Error).message}`);
      return 1;
    }
  }
  console.log(JSON.stringify(await singleCall(library, command, flags)));
  return 0;
}

// Exit at once: neither library keeps the process alive on purpose, but idle HTTP/2 sessions may.
main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
