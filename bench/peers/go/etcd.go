package main

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// etcd's Go concurrency package: a Mutex (or an Election) per acquisition, all on one session of the
// locker, as etcd's docs use them.
type etcdLocker struct {
	cli      *clientv3.Client
	session  *concurrency.Session
	election bool
}

func openEtcd(ctx context.Context, endpoint string, election bool, ttl time.Duration) (locker, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(ttl.Seconds())))
	if err != nil {
		return nil, err
	}
	return &etcdLocker{cli: cli, session: s, election: election}, nil
}

func (l *etcdLocker) acquire(ctx context.Context, resource string) (held, error) {
	pfx := "/peers/" + resource
	if l.election {
		e := concurrency.NewElection(l.session, pfx)
		if err := e.Campaign(ctx, "bench"); err != nil {
			return nil, err
		}
		return &etcdHeld{l: l, election: e}, nil
	}
	m := concurrency.NewMutex(l.session, pfx)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return &etcdHeld{l: l, mutex: m}, nil
}

func (l *etcdLocker) close() {
	_ = l.session.Close()
	_ = l.cli.Close()
}

type etcdHeld struct {
	l        *etcdLocker
	mutex    *concurrency.Mutex
	election *concurrency.Election
}

func (h *etcdHeld) release(ctx context.Context) error {
	if h.election != nil {
		return h.election.Resign(ctx)
	}
	return h.mutex.Unlock(ctx)
}

func (h *etcdHeld) alive() bool {
	select {
	case <-h.l.session.Done():
		return false
	default:
		return true
	}
}

func (h *etcdHeld) write(ctx context.Context, key, value string) []writeResult {
	k := "/peers-store/" + key
	_, err := h.l.cli.Put(ctx, k, value)
	results := []writeResult{{How: "plain Put", Accepted: err == nil, Error: errText(err)}}
	if h.mutex == nil {
		return results
	}
	res, err := h.l.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpPut(k, value)).Commit()
	r := writeResult{How: "Txn If(mutex.IsOwner()) Then Put", Accepted: err == nil && res.Succeeded, Error: errText(err)}
	if err == nil && !res.Succeeded {
		r.Error = "the compare failed: the mutex key is gone"
	}
	return append(results, r)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
