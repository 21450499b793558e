// Every write fencekeeper makes to etcd's key space goes through the committer: one conditional
// transaction per call, so that a check and the writes it guards commit together or not at all.
// Having a single path is what lets a later version batch many transactions into one request.
import type { Etcd3, ITxnRequest, ITxnResponse } from "etcd3";
import { etcdCall } from "./client.js";

export class Committer {
  constructor(private readonly etcd: Etcd3) {}

  /** Commits one transaction. Failing compares are an answer (succeeded = false), not an error. */
  commit(what: string, txn: ITxnRequest): Promise<ITxnResponse> {
    return etcdCall(what, () => this.etcd.kv.txn(txn));
  }
}
