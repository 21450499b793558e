// ListResources: the resources in use (held, waited for, or serving a lock-delay), by name prefix, a
// page at a time. etcd keeps no index of resources, so the scan reads names: one keys-only read of up to
// SCAN_BATCH keys names the next resources, and a resource whose keys the read holds whole is in use when
// one of them is in its holders' range (owner, lock-delay, line, shared holders). The one the read cut
// short gets a count of its holders' range, and the scan goes on past all its keys, so a resource with
// many store entries costs two reads, never a read of its entries. One call looks at most at
// SCAN_LIMIT resources; a page that ends there says where to go on, even when it found fewer than asked.
import { invalid } from "../errors/errors.js";
import type { KeyLayout } from "../etcd/keys.js";
import type { Reader } from "../etcd/reader.js";
import { checkResource } from "../validation/validate.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** Resources looked at by one call, in use or not. */
const SCAN_LIMIT = 2000;
/** Keys per read of the scan (keys only: a few KiB). A resource in use has a handful. */
const SCAN_BATCH = 512;

export interface ListParams {
  prefix: string;
  pageSize: number;
  pageToken: string;
  /** Whether the caller may see a resource (the policy's decision, left by the call pipeline). */
  visible(resource: string): boolean;
}

export interface ResourcePage {
  resources: string[];
  nextPageToken: string;
}

export async function listInUse(d: { keys: KeyLayout; reader: Reader }, p: ListParams): Promise<ResourcePage> {
  if (p.prefix !== "") checkResource(p.prefix, "prefix");
  if (!Number.isInteger(p.pageSize) || p.pageSize < 0 || p.pageSize > MAX_PAGE_SIZE) {
    throw invalid(`page_size is ${p.pageSize}; give 1 to ${MAX_PAGE_SIZE}, or 0 for ${DEFAULT_PAGE_SIZE}`);
  }
  const size = p.pageSize || DEFAULT_PAGE_SIZE;
  const [first, end] = d.keys.resourcesRange(p.prefix);
  let start = first;
  if (p.pageToken !== "") {
    start = Buffer.from(p.pageToken, "base64url");
    if (Buffer.compare(start, first) < 0 || Buffer.compare(start, end) >= 0) {
      throw invalid("page_token is not one that ListResources gave for this prefix; list again without a page_token");
    }
  }
  const resources: string[] = [];
  let scanned = 0;
  while (scanned < SCAN_LIMIT && resources.length < size) {
    const batch = await d.reader.range("list resources", { key: start, range_end: end, limit: SCAN_BATCH, keys_only: true });
    const keys = batch.kvs.map((kv) => kv.key);
    if (keys.length === 0) return { resources, nextPageToken: "" };
    let i = 0;
    while (i < keys.length && scanned < SCAN_LIMIT && resources.length < size) {
      const resource = d.keys.resourceOfKey(keys[i]);
      if (resource === undefined) {
        // Not a resource's key (none should be here): step past it.
        start = Buffer.concat([keys[i], Buffer.from([0])]);
        i++;
        continue;
      }
      // This resource's keys in the read: all of them, unless the read stopped among them.
      let last = i;
      while (last + 1 < keys.length && d.keys.resourceOfKey(keys[last + 1]) === resource) last++;
      const whole = last + 1 < keys.length || !batch.more;
      if (p.visible(resource)) {
        const [from, to] = d.keys.holdersRange(resource);
        const holding = keys.slice(i, last + 1).some((k) => Buffer.compare(k, from) >= 0 && Buffer.compare(k, to) < 0);
        if (holding || (!whole && Number((await d.reader.range("list resources", { key: from, range_end: to, count_only: true })).count) > 0)) {
          resources.push(resource);
        }
      }
      scanned++;
      start = d.keys.afterResource(resource);
      i = last + 1;
    }
    // The read reached the end of the range, and every resource in it is looked at: the last page.
    if (i === keys.length && !batch.more) return { resources, nextPageToken: "" };
  }
  return { resources, nextPageToken: Buffer.compare(start, end) < 0 ? start.toString("base64url") : "" };
}

/** The page token of a listing that goes on at resource (a page that ended before it: the answer budget). */
export function listingTokenAt(keys: KeyLayout, resource: string): string {
  return keys.resourceStart(resource).toString("base64url");
}
