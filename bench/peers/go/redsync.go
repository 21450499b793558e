package main

import (
	"context"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// redsync on one Redis node: a Mutex per acquisition (SET NX PX; waiters poll with redsync's retry
// delay); a held lock is extended at a third of its expiry, as a user must do by hand.
type redsyncLocker struct {
	client *goredislib.Client
	rs     *redsync.Redsync
	ttl    time.Duration
}

func openRedsync(addr string, ttl time.Duration) (locker, error) {
	client := goredislib.NewClient(&goredislib.Options{Addr: addr, PoolSize: 256})
	return &redsyncLocker{client: client, rs: redsync.New(goredis.NewPool(client)), ttl: ttl}, nil
}

func (l *redsyncLocker) acquire(ctx context.Context, resource string) (held, error) {
	m := l.rs.NewMutex("peers:"+resource, redsync.WithExpiry(l.ttl), redsync.WithTries(1<<30))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	h := &redsyncHeld{l: l, m: m, stop: make(chan struct{})}
	go h.extend()
	return h, nil
}

func (l *redsyncLocker) close() { _ = l.client.Close() }

type redsyncHeld struct {
	l    *redsyncLocker
	m    *redsync.Mutex
	once sync.Once
	stop chan struct{}
}

func (h *redsyncHeld) extend() {
	t := time.NewTicker(h.l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			if ok, err := h.m.Extend(); !ok || err != nil {
				return
			}
		}
	}
}

func (h *redsyncHeld) release(ctx context.Context) error {
	h.once.Do(func() { close(h.stop) })
	_, err := h.m.UnlockContext(ctx)
	return err
}

func (h *redsyncHeld) alive() bool { return time.Now().Before(h.m.Until()) }

func (h *redsyncHeld) write(ctx context.Context, key, value string) []writeResult {
	err := h.l.client.Set(ctx, "peers-store:"+key, value, 0).Err()
	return []writeResult{{How: "SET (Redis has no fence)", Accepted: err == nil, Error: errText(err)}}
}
