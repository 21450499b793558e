// The systems of the peers benchmark: which worker program runs each, which servers it uses (their CPU is
// its server CPU), and which workloads it takes part in.
import { fileURLToPath } from "node:url";

export type Workload = "cycles" | "handover" | "crash" | "hold" | "timeline";
export type ServiceName = "fencekeeper" | "etcd" | "zookeeper" | "redis";

export interface SystemDef {
  id: string;
  label: string;
  lang: "go" | "java" | "ts";
  /** The worker's --system. */
  arg: string;
  servers: ServiceName[];
  workloads: Workload[];
  /** What the table says of it, if anything. */
  note?: string;
}

const ALL: Workload[] = ["cycles", "handover", "crash", "hold", "timeline"];

export const SYSTEMS: SystemDef[] = [
  { id: "fk-go", label: "fencekeeper, Go SDK, a lease per acquisition", lang: "go", arg: "fk", servers: ["fencekeeper", "etcd"], workloads: ALL },
  { id: "fk-go-sessions", label: "fencekeeper, Go SDK, `Sessions: true`", lang: "go", arg: "fk-sessions", servers: ["fencekeeper", "etcd"], workloads: ALL },
  { id: "fk-java", label: "fencekeeper, Java SDK, a lease per acquisition", lang: "java", arg: "fk", servers: ["fencekeeper", "etcd"], workloads: ["cycles", "handover"] },
  { id: "fk-ts", label: "fencekeeper, TypeScript client, a lease per acquisition", lang: "ts", arg: "fk", servers: ["fencekeeper", "etcd"], workloads: ["cycles", "handover"] },
  { id: "etcd-mutex", label: "etcd `concurrency.Mutex`, one session", lang: "go", arg: "etcd-mutex", servers: ["etcd"], workloads: ALL },
  { id: "etcd-election", label: "etcd `concurrency.Election` (Campaign + Resign), one session", lang: "go", arg: "etcd-election", servers: ["etcd"], workloads: ["cycles", "handover"] },
  { id: "curator-mutex", label: "ZooKeeper + Curator `InterProcessMutex`", lang: "java", arg: "curator-mutex", servers: ["zookeeper"], workloads: ALL },
  { id: "curator-latch", label: "ZooKeeper + Curator `LeaderLatch` (start, await, close)", lang: "java", arg: "curator-latch", servers: ["zookeeper"], workloads: ["cycles", "handover"] },
  { id: "curator-semaphore", label: "ZooKeeper + Curator `InterProcessSemaphoreV2`, 1 lease", lang: "java", arg: "curator-semaphore", servers: ["zookeeper"], workloads: ["cycles", "handover"] },
  { id: "redsync", label: "Redis + redsync (one node, no consensus; reference)", lang: "go", arg: "redsync", servers: ["redis"], workloads: ALL },
];

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const GO_WORKER = `${ROOT}.conformance/peers/peers-go`;
export const JAVA_WORKER = `${ROOT}bench/peers/java/target/peers-java.jar`;
export const TS_WORKER = `${ROOT}bench/peers/ts-worker.ts`;

/** The command line of a worker, before the workload's own flags. */
export function workerCommand(s: SystemDef): string[] {
  switch (s.lang) {
    case "go":
      return [GO_WORKER, "--system", s.arg];
    case "java":
      return ["java", "-jar", JAVA_WORKER, "--system", s.arg];
    case "ts":
      return [process.execPath, "--import", "tsx", TS_WORKER, "--system", s.arg];
  }
}
