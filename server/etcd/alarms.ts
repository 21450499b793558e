// etcd's alarms, as the health service needs them. etcd raises NOSPACE when its database reaches
// --quota-backend-bytes, and from then on refuses every write (Put, Txn with a put, LeaseGrant) until an
// operator disarms it: a replica in front of such an etcd answers reads only, and says so.
import type { Etcd3 } from "etcd3";
import type { EtcdCalls } from "./calls.js";

/** Whether any member of the cluster has the NOSPACE alarm raised. */
export async function etcdOutOfSpace(etcd: Etcd3, calls: EtcdCalls): Promise<boolean> {
  const res = await calls.run("alarm check", () => etcd.maintenance.alarm({ action: "Get", alarm: "Nospace", memberID: 0 }));
  return res.alarms.some((a) => String(a.alarm) === "Nospace" || String(a.alarm) === "1");
}
