// The google.rpc.ErrorInfo reason of a failed call (e.g. "STALE_TOKEN"), for logs and metrics.
import type { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema, type ErrorInfo } from "../../gen/ts/google/rpc/error_details_pb.js";

export function errorReason(error: ConnectError | undefined): string | undefined {
  const info = error?.findDetails(ErrorInfoSchema)[0] as ErrorInfo | undefined;
  return info?.reason || undefined;
}
