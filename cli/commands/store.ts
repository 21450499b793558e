// fencekeeper put / get / delete / ls: the fenced store from the shell. Writes take the token that
// acquire printed, with --token or FENCEKEEPER_TOKEN.
import { Command, Option } from "commander";
import type { Commit, FenceModeName, Token } from "../../client/index.js";
import { EXIT } from "../exit-codes.js";
import { showValue, toJsonLine, valueJson } from "../output.js";
import { positiveInteger, token } from "../parse.js";
import { action, type Context } from "../run.js";

interface WriteFlags {
  token: Token;
  mode?: FenceModeName;
  idempotencyKey?: string;
}

function writeOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option("--token <token>", 'the token from acquire: "resource:generation:leaseId" or its JSON')
        .env("FENCEKEEPER_TOKEN")
        .argParser(token)
        .makeOptionMandatory(),
    )
    .addOption(new Option("--mode <mode>", "order: generation >= fence; live: also the lease still held (server default: order)").choices(["order", "live"]))
    .option("--idempotency-key <key>", "a retry with the same key returns the first result and applies nothing");
}

function printCommit(ctx: Context, what: string, c: Commit): void {
  ctx.out.result({ revision: c.revision, fence: c.fence, replayed: c.replayed }, () =>
    `${what} at revision ${c.revision}; fence ${c.fence}${c.replayed ? " (replayed: an earlier request with this idempotency key)" : ""}`,
  );
}

async function stdinBytes(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function storeCommands(): Command[] {
  const put = writeOptions(
    new Command("put")
      .description("write a key under a token")
      .argument("<resource>", "the resource whose keys are written")
      .argument("<key>")
      .argument("[value]", 'the value; omitted or "-": read from stdin'),
  ).action(
    action(async (ctx, resource: string, key: string, value: string | undefined, o: WriteFlags) => {
      sameResource(resource, o.token);
      const bytes = value === undefined || value === "-" ? await stdinBytes() : value;
      const c = await ctx.client().store.put(o.token, key, bytes, { mode: o.mode, idempotencyKey: o.idempotencyKey });
      printCommit(ctx, `put "${key}"`, c);
    }),
  );

  const get = new Command("get")
    .description("read a key (no token needed); exit 4 if it does not exist")
    .argument("<resource>")
    .argument("<key>")
    .action(
      action(async (ctx, resource: string, key: string) => {
        const r = await ctx.client().store.get(resource, key);
        if (ctx.out.json) process.stdout.write(toJsonLine({ found: r.found, key, ...valueJson(r.value), modRevision: r.modRevision, fence: r.fence }));
        else if (r.found) ctx.out.raw(r.value);
        else process.stderr.write(`fencekeeper: no key "${key}" in "${resource}"\n`);
        return r.found ? EXIT.ok : EXIT.notFound;
      }),
    );

  const del = writeOptions(
    new Command("delete").description("delete a key under a token (a missing key is no error)").argument("<resource>").argument("<key>"),
  ).action(
    action(async (ctx, resource: string, key: string, o: WriteFlags) => {
      sameResource(resource, o.token);
      const c = await ctx.client().store.delete(o.token, key, { mode: o.mode, idempotencyKey: o.idempotencyKey });
      printCommit(ctx, `deleted "${key}"`, c);
    }),
  );

  const ls = new Command("ls")
    .description("list the keys of a resource, in key order")
    .argument("<resource>")
    .argument("[prefix]", "only keys that start with this")
    .option("--keys-only", "leave the values out")
    .option("--page-size <n>", "keys fetched per call", positiveInteger)
    .action(
      action(async (ctx, resource: string, prefix: string | undefined, o: { keysOnly?: boolean; pageSize?: number }) => {
        for await (const e of ctx.client().store.list(resource, { prefix, keysOnly: o.keysOnly, pageSize: o.pageSize })) {
          ctx.out.result(o.keysOnly ? { key: e.key, modRevision: e.modRevision } : { key: e.key, ...valueJson(e.value), modRevision: e.modRevision }, () =>
            o.keysOnly ? e.key : `${e.key}\t${showValue(e.value)}`,
          );
        }
      }),
    );

  return [put, get, del, ls];
}

/** The resource argument must be the token's: say so here rather than send a write the server refuses. */
function sameResource(resource: string, t: Token): void {
  if (resource !== t.resource) throw new RangeError(`the token is for "${t.resource}", not "${resource}"`);
}
