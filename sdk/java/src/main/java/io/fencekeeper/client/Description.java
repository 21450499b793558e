package io.fencekeeper.client;

import io.fencekeeper.v1.FencingToken;
import java.time.Duration;

/**
 * Who holds a resource (FencekeeperClient.describe): when held, the holder's label, token, the TTL left
 * on its lease as etcd reports it, and its principal; how many wait; the resource's fence and the
 * greatest generation issued.
 */
public record Description(boolean held, String holder, FencingToken token, Duration ttl, int waiters, long fence, long lastIssued, String holderPrincipal) {}
