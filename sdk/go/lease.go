package fencekeeper

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lease is a held lease: its token, a loss signal (Done, Context) that fires the moment the lease can
// no longer be assumed held, and the store calls a holder makes, with the token attached. Done, Context,
// Err, Check and Held look at the clock first, so a process that was paused past the deadline sees the
// loss on its first look, before any timer has run. Safe for concurrent use.
type Lease struct {
	token    Token
	ttl      time.Duration
	interval time.Duration
	c        *Client

	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelCauseFunc
	ending  chan struct{} // closed once the cleanup on the server (a Release) has finished
	unwatch func() bool   // stops watching the Acquire's context

	mu   sync.Mutex
	dl   deadline
	lost *LeaseLostError
}

func newLease(c *Client, ctx context.Context, token Token, ttl time.Duration, sentAt, answeredAt time.Time) *Lease {
	l := &Lease{
		token:    token,
		ttl:      ttl,
		interval: ttl / 3,
		c:        c,
		done:     make(chan struct{}),
		ending:   make(chan struct{}),
		dl:       newDeadline(sentAt, ttl-c.drift(ttl), answeredAt),
	}
	// The lease's context keeps the Acquire context's values, not its cancellation: that ends the lease
	// (LostCanceled), which then cancels this one with the LeaseLostError as its cause.
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	l.unwatch = context.AfterFunc(ctx, func() { l.end(LostCanceled, context.Cause(ctx)) })
	return l
}

// Token is the lease's fencing token.
func (l *Lease) Token() Token { return l.token }

// TTL is the TTL etcd granted.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Done is closed once the lease can no longer be assumed held. It looks at the clock first; a channel
// kept in a variable is closed by the client's timer at the deadline, which after a pause of the
// process may run after your own code: call Check right before acting on the lease.
func (l *Lease) Done() <-chan struct{} {
	l.look()
	return l.done
}

// Context is cancelled, with the *LeaseLostError as its cause (context.Cause), once the lease is lost.
// It carries the values of the context given to Acquire. It looks at the clock first, as Done does.
func (l *Lease) Context() context.Context {
	l.look()
	return l.ctx
}

// Err is nil while the lease may be assumed held, by the clock right now, and the *LeaseLostError after.
func (l *Lease) Err() error {
	l.look()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		return nil
	}
	return l.lost
}

// Check is Err, by its name for the moment right before acting on the lease.
func (l *Lease) Check() error { return l.Err() }

// Held says whether the lease may still be assumed held, by the clock right now.
func (l *Lease) Held() bool { return l.Err() == nil }

// ValidUntil is until when the lease may be assumed held: the send time of the last confirmed renewal
// (or of the Acquire) + the granted TTL - the drift margin.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dl.validUntil()
}

// LastConfirmedAt is when the last renewal's answer (or the Acquire's) arrived.
func (l *Lease) LastConfirmedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dl.confirmedAt
}

// Release gives the lease up: renewals stop, Done closes, the server releases it. It waits for the
// server's answer, or for ctx. Idempotent, and never fails: with renewals stopped, a lease the server
// cannot be told about ends at its TTL.
func (l *Lease) Release(ctx context.Context) {
	l.end(LostReleased, nil)
	select {
	case <-l.ending:
	case <-ctx.Done():
	}
}

// Put writes key = value in the lease's resource, with its token.
func (l *Lease) Put(ctx context.Context, key string, value []byte, opts ...WriteOption) (Commit, error) {
	return l.write(func() (Commit, error) { return l.c.Store().Put(ctx, l.token, key, value, l.writeOptions(opts)...) })
}

// Delete deletes key from the lease's resource, with its token.
func (l *Lease) Delete(ctx context.Context, key string, opts ...WriteOption) (Commit, error) {
	return l.write(func() (Commit, error) { return l.c.Store().Delete(ctx, l.token, key, l.writeOptions(opts)...) })
}

// Txn applies ops to the lease's resource atomically, with its token.
func (l *Lease) Txn(ctx context.Context, ops []TxnOp, opts ...WriteOption) (Commit, error) {
	return l.write(func() (Commit, error) { return l.c.Store().Txn(ctx, l.token, ops, l.writeOptions(opts)...) })
}

// Get reads key from the lease's resource, after checking the lease is held.
func (l *Lease) Get(ctx context.Context, key string) (GetResult, error) {
	if err := l.Check(); err != nil {
		return GetResult{}, err
	}
	return l.c.Store().Get(ctx, l.token.Resource, key)
}

// Writes through a lease use the client's fence mode (FenceLive unless Options.FenceMode says) unless
// the call says otherwise.
func (l *Lease) writeOptions(opts []WriteOption) []WriteOption {
	return append([]WriteOption{WithFenceMode(l.c.fenceMode)}, opts...)
}

// write checks the lease first, so that a lost lease sends nothing; a refusal by the fence ends it.
func (l *Lease) write(call func() (Commit, error)) (Commit, error) {
	if err := l.Check(); err != nil {
		return Commit{}, err
	}
	commit, err := call()
	var stale *StaleTokenError
	var notHeld *LeaseNotHeldError
	if errors.As(err, &stale) || errors.As(err, &notHeld) {
		l.end(LostFenced, err)
	}
	return commit, err
}

// look ends the lease if its deadline has passed.
func (l *Lease) look() {
	if l.passed(time.Now()) {
		l.end(LostDeadline, nil)
	}
}

// passed says whether the lease is still held but its deadline has passed at now.
func (l *Lease) passed(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost == nil && l.dl.passedAt(now)
}

// confirm takes in a renewal's answer; false if the deadline had passed when it came (or the lease had ended).
func (l *Lease) confirm(sentAt time.Time, ttl time.Duration, at time.Time) (ok bool, validUntil time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil || !l.dl.confirm(sentAt, ttl-l.c.drift(ttl), at) {
		return false, time.Time{}
	}
	return true, l.dl.validUntil()
}

// monoDeadline is the deadline on the monotonic clock, for the scheduler's timer.
func (l *Lease) monoDeadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dl.mono
}

// end ends the lease once, for why: the loss signal fires first, then renewals stop and, unless the
// server said the lease is gone, the lease is released on the server (one past its deadline may still
// be held in etcd).
func (l *Lease) end(why LossCause, cause error) {
	l.mu.Lock()
	if l.lost != nil {
		l.mu.Unlock()
		return
	}
	lost := &LeaseLostError{Why: why, Token: l.token, ValidUntil: l.dl.validUntil(), LastConfirmedAt: l.dl.confirmedAt, Cause: cause}
	lost.LostAt = time.Now()
	l.lost = lost
	close(l.done)
	l.cancel(lost)
	l.mu.Unlock()

	l.unwatch()
	l.c.keepAlive.remove(l)
	l.c.forget(l)
	if why == LostReleased || why == LostCanceled {
		l.c.emit(Event{Type: EventReleased, Token: l.token})
	} else {
		l.c.emit(Event{Type: EventLost, Token: l.token, Err: lost})
	}
	if why == LostNotFound {
		close(l.ending)
		return
	}
	go func() {
		defer close(l.ending)
		l.c.release(l.token)
	}()
}
