package io.fencekeeper.client;

/**
 * A moment on both clocks. The monotonic clock (System.nanoTime) cannot jump, but on Linux it stops
 * while the machine is suspended, when etcd's clock does not; the wall clock counts a suspension but
 * may be stepped. A lease's deadline is therefore kept on both (Deadline), and has passed as soon as
 * either clock says so.
 */
record Stamp(long monoNanos, long wallMillis) {
  static Stamp now() {
    return new Stamp(System.nanoTime(), System.currentTimeMillis());
  }
}
