package io.fencekeeper.client;

import io.fencekeeper.v1.FencingToken;

/** One state of a resource's ownership (FencekeeperClient.observe), at an etcd revision. */
public record Ownership(boolean held, String holder, FencingToken token, long revision, String holderPrincipal) {}
