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
	token Token
	k     *keeper
	c     *Client

	done   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
	ending chan struct{} // closed once the cleanup on the server (a Release, a CloseSession) has finished

	mu      sync.Mutex
	lost    *LeaseLostError
	unwatch func() bool // stops watching AcquireOptions.LeaseContext
}

// newLease makes the lease of token, kept by k, with the values of the Acquire's ctx; the end of
// leaseCtx, if given, ends it (LostCanceled).
func newLease(c *Client, ctx, leaseCtx context.Context, token Token, k *keeper) *Lease {
	l := &Lease{token: token, k: k, c: c, done: make(chan struct{}), ending: make(chan struct{}), unwatch: func() bool { return false }}
	// The lease's context keeps the Acquire context's values, not its cancellation, which bounds the
	// call alone; it is cancelled with the LeaseLostError as its cause when the lease ends.
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	c.mu.Lock()
	c.leases[l] = struct{}{}
	c.mu.Unlock()
	k.attach(l)
	if leaseCtx == nil {
		return l
	}
	unwatch := context.AfterFunc(leaseCtx, func() { l.end(LostCanceled, context.Cause(leaseCtx)) })
	l.mu.Lock()
	l.unwatch = unwatch
	lost := l.lost != nil
	l.mu.Unlock()
	if lost {
		unwatch() // ended while attaching: nothing to watch for
	}
	return l
}

// Token is the lease's fencing token.
func (l *Lease) Token() Token { return l.token }

// TTL is the TTL etcd granted (the session's, for a lease on a session).
func (l *Lease) TTL() time.Duration { return l.k.ttl }

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
// (or of the Acquire) + the granted TTL - the drift margin; on a session, of the session's renewal.
func (l *Lease) ValidUntil() time.Time {
	validUntil, _ := l.k.state()
	return validUntil
}

// LastConfirmedAt is when the last renewal's answer (or the Acquire's, or the OpenSession's) arrived.
func (l *Lease) LastConfirmedAt() time.Time {
	_, confirmedAt := l.k.state()
	return confirmedAt
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

// look ends the lease (with its keeper) if its deadline has passed, or if its keeper was lost.
func (l *Lease) look() {
	l.mu.Lock()
	lost := l.lost != nil
	l.mu.Unlock()
	if lost || !l.k.expireIfPassed() {
		return
	}
	if why, cause, lost := l.k.loss(); lost {
		l.finish(why, cause, l.k.cleaned)
	}
}

// end ends the lease on its own (released, fenced, canceled): a session it was on lives on.
func (l *Lease) end(why LossCause, cause error) {
	if !l.markLost(why, cause) {
		return
	}
	l.k.leaseEnded(l, why)
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		l.c.release(l.token)
	}()
	l.ended(why, cleaned)
}

// finish ends the lease with its keeper; cleaned closes once the keeper's cleanup on the server is done.
func (l *Lease) finish(why LossCause, cause error, cleaned <-chan struct{}) {
	if l.markLost(why, cause) {
		l.ended(why, cleaned)
	}
}

// markLost fires the loss signal, once: Done closes and the context is cancelled with the
// LeaseLostError. False if the lease had ended already.
func (l *Lease) markLost(why LossCause, cause error) bool {
	validUntil, confirmedAt := l.k.state()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return false
	}
	l.lost = &LeaseLostError{Why: why, Token: l.token, ValidUntil: validUntil, LastConfirmedAt: confirmedAt, LostAt: time.Now(), Cause: cause}
	close(l.done)
	l.cancel(l.lost)
	return true
}

// ended is what follows the loss signal: the client forgets the lease and says so; ending closes
// once the cleanup on the server is done.
func (l *Lease) ended(why LossCause, cleaned <-chan struct{}) {
	l.mu.Lock()
	unwatch := l.unwatch
	l.mu.Unlock()
	unwatch()
	l.c.forget(l)
	if why == LostReleased || why == LostCanceled {
		l.c.emit(Event{Type: EventReleased, Token: l.token})
	} else {
		l.c.emit(Event{Type: EventLost, Token: l.token, Err: l.lost})
	}
	go func() {
		<-cleaned
		close(l.ending)
	}()
}
