// ListResources: the resources in use (held, waited for, or serving a lock-delay), by name prefix, a
// page at a time. etcd keeps no index of resources, so the scan jumps from one resource's keys to the
// next: one keys-only read finds the next resource, one count of its holders' range (owner, lock-delay,
// line, shared holders) says whether it is in use, and the scan goes on past all its keys, so a
// resource's store entries are never read. One call looks at most at SCAN_LIMIT resources; a page that
// ends there says where to go on, even when it found fewer than asked.
import { invalid } from "../errors/errors.js";
import type { KeyLayout } from "../etcd/keys.js";
import type { Reader } from "../etcd/reader.js";
import { checkResource } from "../validation/validate.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** Resources looked at by one call, in use or not (two etcd reads each). */
const SCAN_LIMIT = 2000;

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
  for (let scanned = 0; scanned < SCAN_LIMIT && resources.length < size; scanned++) {
    const next = await d.reader.range("list resources", { key: start, range_end: end, limit: 1, keys_only: true });
    const key = next.kvs[0]?.key;
    if (!key) return { resources, nextPageToken: "" };
    const resource = d.keys.resourceOfKey(key);
    if (resource === undefined) {
      // Not a resource's key (none should be here): step past it.
      start = Buffer.concat([key, Buffer.from([0])]);
      continue;
    }
    if (p.visible(resource)) {
      const [from, to] = d.keys.holdersRange(resource);
      const held = await d.reader.range("list resources", { key: from, range_end: to, count_only: true });
      if (Number(held.count) > 0) resources.push(resource);
    }
    start = d.keys.afterResource(resource);
  }
  return { resources, nextPageToken: Buffer.compare(start, end) < 0 ? start.toString("base64url") : "" };
}

/** The page token of a listing that goes on at resource (a page that ended before it: the answer budget). */
export function listingTokenAt(keys: KeyLayout, resource: string): string {
  return keys.resourceStart(resource).toString("base64url");
}
