package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Who holds a resource (FencekeeperClient.describe): held exclusively or by shared holders; the exclusive
 * holder's label, token, the TTL left on its lease as etcd reports it, and its principal (null when the
 * holders are shared); every holder; how many wait; the resource's fence and the greatest generation
 * issued; the holder's lock-delay (or, in a lock-delay, the one being served), and while the resource is
 * in a lock-delay, about when it ends; the exclusive holder's published value (empty without one), and the
 * shared holders' semaphore size (0 when they are not a semaphore's).
 */
public record Description(
    boolean held,
    String holder,
    Token token,
    Duration ttl,
    int waiters,
    long fence,
    long lastIssued,
    String holderPrincipal,
    List<Holder> holders,
    Duration lockDelay,
    Instant lockDelayUntil,
    ByteString value,
    int maxHolders) {

  /**
   * One holder: its label, token, the TTL left on its lease (whole seconds, as etcd reports it; null in
   * observe()), its principal, and the value it published (AcquireRequest.value, or its latest proclaim;
   * empty without one).
   */
  public record Holder(String holder, Token token, Duration ttl, String principal, ByteString value) {}
}
