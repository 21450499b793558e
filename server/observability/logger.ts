// The server's logger: JSON lines on stdout (pino), each written during a call carrying its request id.
//
// A log line that cannot be written is lost, and nothing else happens: it never stops, blocks or crashes
// the server, nor its shutdown. pino's default destination could not promise that. It is an asynchronous
// sonic-boom on fd 1 that, when the process exits, writes what it still holds with flushSync, and
// flushSync retries a failed write every 100 ms for as long as it fails: for ever on a closed pipe (EPIPE,
// after `| head -3` has gone), and for as long as nobody reads a full one (EAGAIN). The shutdown logs
// "stopped" and calls process.exit while the line before is still being written, so that line was still
// held, and process.exit never returned; a second signal could not help, the main thread being stuck in
// the 'exit' event, where no signal handler runs.
//
// So lines go to process.stdout, which never writes anything at exit: a line that finds the pipe full
// waits in memory (up to MAX_PENDING_BYTES, beyond which lines are dropped), and the first error (EPIPE,
// EBADF, ...) turns logging off for good. stderr, where Node writes its warnings, gets an 'error' listener
// too, or a closed stderr would crash the server at its next warning.
import pino, { type DestinationStream, type Logger } from "pino";
import { currentRequest } from "../rpc/request-context.js";

/** Log waiting for a reader beyond this is dropped rather than held in memory. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;

class StdoutDestination implements DestinationStream {
  private failed = false;

  constructor(private readonly out: NodeJS.WriteStream) {
    out.on("error", () => {
      this.failed = true;
    });
  }

  /** Whether lines are still waiting to be written, and can be. */
  pending(): boolean {
    return !this.failed && !this.out.destroyed && this.out.writableLength > 0;
  }

  write(line: string): void {
    if (this.failed || this.out.destroyed || this.out.writableLength > MAX_PENDING_BYTES) return;
    try {
      this.out.write(line);
    } catch {
      this.failed = true;
    }
  }
}

let destination: StdoutDestination | undefined;

export function createLogger(level: string): Logger {
  if (!destination) {
    destination = new StdoutDestination(process.stdout);
    process.stderr.on("error", () => {});
  }
  return pino(
    {
      level,
      base: { service: "fencekeeper" },
      mixin() {
        const request = currentRequest();
        return request ? { requestId: request.requestId } : {};
      },
    },
    destination,
  );
}

/**
 * Resolves once stdout has taken every line logged so far, or has failed, or after timeoutMs: a shutdown
 * waits for this before process.exit, which drops what a slow reader has not taken yet.
 */
export async function logWritten(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (destination?.pending() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}
