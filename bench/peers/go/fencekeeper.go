package main

import (
	"context"
	"errors"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

// fencekeeper's Go SDK: Acquire with Wait + Release; a lease per acquisition, or on a session.
type fkLocker struct {
	c   *fencekeeper.Client
	ttl time.Duration
}

func openFencekeeper(url string, sessions bool, ttl time.Duration) (locker, error) {
	c, err := fencekeeper.New(fencekeeper.Options{Servers: []string{url}, OwnLeases: !sessions, Holder: "bench-peers"})
	if err != nil {
		return nil, err
	}
	return &fkLocker{c: c, ttl: ttl}, nil
}

func (l *fkLocker) acquire(ctx context.Context, resource string) (held, error) {
	lease, err := l.c.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: l.ttl, Wait: true})
	if err != nil {
		return nil, err
	}
	return &fkHeld{l.c, lease}, nil
}

func (l *fkLocker) close() { _ = l.c.Close() }

type fkHeld struct {
	c     *fencekeeper.Client
	lease *fencekeeper.Lease
}

func (h *fkHeld) release(ctx context.Context) error {
	h.lease.Release(ctx)
	return nil
}

func (h *fkHeld) alive() bool { return h.lease.Held() }

func (h *fkHeld) write(ctx context.Context, key, value string) []writeResult {
	verdict := func(how string, err error) writeResult {
		r := writeResult{How: how, Accepted: err == nil}
		if err != nil {
			var stale *fencekeeper.StaleTokenError
			if errors.As(err, &stale) {
				r.Error = "refused by the fenced store: stale token"
			} else {
				r.Error = err.Error()
			}
		}
		return r
	}
	_, err := h.c.Store().Put(ctx, h.lease.Token(), key, []byte(value))
	results := []writeResult{verdict("fenced store Put with the holder's token", err)}
	_, err = h.lease.Put(ctx, key, []byte(value))
	return append(results, verdict("Lease.Put (the SDK checks the lease, the store the token)", err))
}
