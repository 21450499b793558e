package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * One state of a resource's ownership (FencekeeperClient.observe), at an etcd revision: held exclusively or
 * by shared holders; the exclusive holder's label, token, principal and value (null, and an empty value,
 * when the holders are shared; a proclaim of the same holder is a change of its own: the same token, a new
 * value); every holder after this change (ttl null) and the shared holders that joined and left since the
 * previous one; the shared holders' semaphore size (0 when they are not a semaphore's); the new holder's
 * lock-delay (or, while lockDelayUntil is set, the one being served, else null); and when the resource has
 * entered a lock-delay, about when it ends.
 */
public record Ownership(
    boolean held,
    String holder,
    Token token,
    long revision,
    String holderPrincipal,
    ByteString value,
    List<Description.Holder> holders,
    List<Description.Holder> joined,
    List<Description.Holder> left,
    int maxHolders,
    Duration lockDelay,
    Instant lockDelayUntil) {}
