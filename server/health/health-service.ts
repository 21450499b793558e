// grpc.health.v1.Health: Check, List and Watch over HealthStatus.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { Health } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { AsyncQueue } from "../streams/async-queue.js";
import { ServingStatus, type HealthStatus } from "./status.js";

export function healthService(status: HealthStatus): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const s = status.of(req.service);
      if (s === undefined) throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
      return { status: s };
    },

    list() {
      return { statuses: Object.fromEntries([...status.all()].map(([name, s]) => [name, { status: s }])) };
    },

    async *watch(req, ctx) {
      // At most one change waits for a reader: each says only "look again", so a reader that never
      // reads costs one entry, however often the status changes.
      const changes = new AsyncQueue<void>();
      let pending = false;
      const stop = status.onChange(() => {
        if (pending) return;
        pending = true;
        changes.push();
      });
      const close = () => changes.close();
      ctx.signal.addEventListener("abort", close, { once: true });
      try {
        let last: ServingStatus | undefined;
        pending = true;
        changes.push();
        for await (const _ of changes) {
          pending = false;
          const now = status.of(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
          if (now === last) continue;
          last = now;
          yield { status: now };
        }
      } finally {
        stop();
        ctx.signal.removeEventListener("abort", close);
      }
    },
  };
}
