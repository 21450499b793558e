package io.fencekeeper.client;


/** One state of a resource's ownership (FencekeeperClient.observe), at an etcd revision. */
public record Ownership(boolean held, String holder, Token token, long revision, String holderPrincipal) {}
