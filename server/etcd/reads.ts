// The reads of a transaction, by name. etcd answers a transaction's reads as a list, in the order they
// were asked; a caller that counts positions in that list breaks silently when someone adds a read
// before its own. A Reads value is built once, as named parts, and the same value puts its requests
// into the transaction and decodes the answers back into those names, so no caller counts positions.
import type { IRangeRequest, IRangeResponse, IRequestOp, IResponseOp } from "etcd3";

/** A part of named reads: one range, a list of ranges read alike, or reads of their own. */
type Part = IRangeRequest | IRangeRequest[] | Reads<unknown>;
type Decoded<P> = P extends Reads<infer T> ? T : P extends IRangeRequest[] ? IRangeResponse[] : IRangeResponse;

export class Reads<T> {
  private constructor(
    /** The range requests, in the order decode() takes their answers. */
    readonly requests: IRangeRequest[],
    private readonly decodeAll: (ranges: IRangeResponse[]) => T,
  ) {}

  /** One read per name: a part's answer is found under its name. */
  static named<S extends Record<string, Part>>(spec: S): Reads<{ [K in keyof S]: Decoded<S[K]> }> {
    const parts = Object.entries(spec).map(([name, p]) => [name, p instanceof Reads ? p : Array.isArray(p) ? Reads.each(p) : Reads.one(p)] as const);
    return new Reads(
      parts.flatMap(([, p]) => p.requests),
      (ranges) => {
        const found: Record<string, unknown> = {};
        let at = 0;
        for (const [name, p] of parts) {
          found[name] = p.decode(ranges.slice(at, at + p.requests.length));
          at += p.requests.length;
        }
        return found as { [K in keyof S]: Decoded<S[K]> };
      },
    );
  }

  /** Several reads of the same shape in one transaction: what each found, in order. */
  static all<T>(parts: Reads<T>[]): Reads<T[]> {
    return new Reads(
      parts.flatMap((p) => p.requests),
      (ranges) => {
        let at = 0;
        return parts.map((p) => p.decode(ranges.slice(at, (at += p.requests.length))));
      },
    );
  }

  static one(request: IRangeRequest): Reads<IRangeResponse> {
    return new Reads([request], ([r]) => r);
  }

  static each(requests: IRangeRequest[]): Reads<IRangeResponse[]> {
    return new Reads(requests, (ranges) => ranges);
  }

  /** One range if there is a request, else no read at all (found: undefined). */
  static maybe(request: IRangeRequest | undefined): Reads<IRangeResponse | undefined> {
    return request ? Reads.one(request) : Reads.nothing();
  }

  /** No read (found: undefined), where a transaction of one shape reads something only in some cases. */
  static nothing(): Reads<undefined> {
    return new Reads([], () => undefined);
  }

  /** The same reads, decoded further by f. */
  map<U>(f: (found: T) => U): Reads<U> {
    return new Reads(this.requests, (ranges) => f(this.decodeAll(ranges)));
  }

  /** The reads as operations of a transaction's branch. */
  ops(): IRequestOp[] {
    return this.requests.map((r) => ({ request_range: r }));
  }

  /** What the reads found, from their answers (a snapshot's ranges), in the order of `requests`. */
  decode(ranges: IRangeResponse[]): T {
    if (ranges.length !== this.requests.length) throw new Error(`${this.requests.length} reads were answered by ${ranges.length} ranges`);
    return this.decodeAll(ranges);
  }

  /** What the reads found, from the responses of the transaction branch that held ops() first. */
  decodeTxn(responses: IResponseOp[]): T {
    return this.decode(responses.slice(0, this.requests.length).map((r) => r.response_range));
  }
}

/** Reads by name (Reads.named). */
export const reads = Reads.named;
