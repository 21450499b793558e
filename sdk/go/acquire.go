package fencekeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Acquiring: on the client's session of that TTL, or on an etcd lease of its own (Options.OwnLeases,
// AcquireOptions.OwnLease, and always with LockDelay or Preempt); failing fast or waiting in line;
// cancelled by the caller's context. And WithLease, the scoped form.

// AcquireOptions are those of one acquisition. The zero value fails fast with a TTL of DefaultTTL.
type AcquireOptions struct {
	// TTL of the lease; etcd grants whole seconds, at least 2 s. Default DefaultTTL.
	TTL time.Duration
	// Wait: false fails with *ResourceHeldError if the resource is held; true waits in line.
	Wait bool
	// WaitTimeout, with Wait, is the longest wait (then *TimeoutError). Zero: as long as ctx allows.
	WaitTimeout time.Duration
	// NoWait fails fast (*ResourceHeldError) even where the entry point waits unless told otherwise
	// (Semaphore); it overrides Wait.
	NoWait bool
	// Holder overrides Options.Holder.
	Holder string
	// LockDelay: if the lease expires (it is not released), nobody is granted the resource for this long
	// afterwards (docs/lock-delay.md); whole seconds, rounded up. Zero: none. Such a lease is always one
	// of its own, never on the session.
	LockDelay time.Duration
	// Shared takes a shared acquisition (docs/shared-leases.md): held beside other shared ones while no
	// exclusive acquisition holds or waits. Its token's Shared is true, and the fenced store refuses its
	// writes (reason SHARED_TOKEN). Default false: exclusive.
	Shared bool
	// LeaseContext, if set, ties the lease's life to a context, as etcd's concurrency.WithContext ties a
	// session's: when it ends, the lease is released (LostCanceled). Nil: the lease lives until Release,
	// Client.Close or its loss, whatever becomes of the context given to Acquire.
	LeaseContext context.Context
	// Value is published with the acquisition (docs/election.md): Describe and Observe show it, and
	// Lease.Proclaim changes it. At most 1 MiB.
	Value []byte
	// MaxHolders makes the acquisition a permit of a counting semaphore of that many (docs/semaphores.md;
	// Client.Semaphore). Implies Shared. Zero: no cap.
	MaxHolders int
	// Preempt takes the resource from whoever holds it, at once, ahead of the waiters (docs/preemption.md):
	// for an orchestrator that knows the holder is gone. The old holder's writes are refused from then on,
	// and its lease is lost (LostPreempted, a *PreemptedError cause) at its next renewal. Needs the policy
	// verb preempt (or admin); exclusive, on a lease of its own (never on the session), without
	// LockDelay; never waits.
	Preempt bool
	// OwnLease puts this acquisition on an etcd lease of its own rather than on the client's session:
	// for a TTL that other acquisitions must not share the fate of, or a holder that must be able to
	// lose this lock without losing the others (docs/client.md, "Sessions"). LockDelay and Preempt
	// always take a lease of their own. Default false (unless Options.OwnLeases).
	OwnLease bool
}

func (o AcquireOptions) mode() fencekeeperv1.AcquireMode {
	if o.Shared || o.MaxHolders > 0 {
		return fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED
	}
	return fencekeeperv1.AcquireMode_ACQUIRE_MODE_UNSPECIFIED
}

// opening is a session being opened, or open: the acquisitions that ask at the same time wait for one.
type opening struct {
	done chan struct{}
	k    *keeper
	err  error
}

// Acquire acquires a resource and keeps its lease alive until it is released, the client closed, or the
// lease lost. ctx bounds the wait and the call only, as the context of etcd's Mutex.Lock does: a ctx
// that ends while the call is on its way ends the wait (*CanceledError) and leaves nothing behind; once
// Acquire has returned, ctx's end changes nothing. To end the lease with a context, set
// AcquireOptions.LeaseContext.
func (c *Client) Acquire(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	o.Wait = o.Wait && !o.NoWait
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, &CanceledError{&StatusError{Code: codes.Canceled, Message: "the client is closed", Metadata: map[string]string{}}}
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Holder == "" {
		o.Holder = c.holder
	}
	if c.onSession(o.OwnLease, o.LockDelay, o.Preempt) {
		if l, err := c.acquireOnSession(ctx, resource, o); l != nil || err != nil {
			return l, err
		}
	}
	return c.acquireOwn(ctx, resource, o)
}

// onSession says whether an acquisition goes on the session: a lock-delay and a preemption need a lease
// of their own (the server refuses them on a session, where acquisitions end with the session).
func (c *Client) onSession(ownLease bool, lockDelay time.Duration, preempt bool) bool {
	return c.sessions != nil && !ownLease && lockDelay == 0 && !preempt
}

// acquire sends one Acquire, coalesced with the client's others unless Options.DisableLockCoalescing.
func (c *Client) acquire(ctx context.Context, req *fencekeeperv1.AcquireRequest, waitTimeout time.Duration) (*fencekeeperv1.AcquireResponse, error) {
	var res *fencekeeperv1.AcquireResponse
	var err error
	if c.locks != nil {
		res, err = c.locks.acquire(ctx, req, waitTimeout)
	} else {
		res, err = c.acquireCall(ctx, req, waitTimeout)
	}
	if err == nil && res.GetToken() == nil {
		err = &StatusError{Code: codes.Internal, Message: "the server granted a lease without a token", Metadata: map[string]string{}}
	}
	return res, err
}

// acquireCall sends one plain Acquire, with a deadline that leaves room for the wait.
func (c *Client) acquireCall(ctx context.Context, req *fencekeeperv1.AcquireRequest, waitTimeout time.Duration) (*fencekeeperv1.AcquireResponse, error) {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	switch {
	case !req.Wait:
		callCtx, cancel = context.WithTimeout(ctx, c.callTimeout)
	case waitTimeout > 0:
		req.WaitTimeout = durationpb.New(waitTimeout)
		callCtx, cancel = context.WithTimeout(ctx, c.callTimeout+waitTimeout)
	}
	defer cancel()
	var res *fencekeeperv1.AcquireResponse
	err := c.servers.run(false, func(cn *conn) (err error) {
		res, err = cn.lease.Acquire(callCtx, req)
		return err
	})
	return res, err
}

func canceled(ctx context.Context, resource string) error {
	return &CanceledError{&StatusError{Code: codes.Canceled, Message: fmt.Sprintf("acquire of %q was canceled", resource), Metadata: map[string]string{}, Err: context.Cause(ctx)}}
}

// acquireOwn is an acquisition on an etcd lease of its own.
func (c *Client) acquireOwn(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	req := &fencekeeperv1.AcquireRequest{Resource: resource, Ttl: durationpb.New(o.TTL), Holder: o.Holder, Wait: o.Wait, Mode: o.mode(), Value: o.Value, MaxHolders: int32(o.MaxHolders), Preempt: o.Preempt}
	if o.LockDelay != 0 {
		req.LockDelay = durationpb.New(o.LockDelay)
	}
	sentAt := time.Now()
	res, err := c.acquire(ctx, req, o.WaitTimeout)
	if err != nil {
		return nil, err
	}
	if res.GetTtl() == nil {
		return nil, &StatusError{Code: codes.Internal, Message: "the server granted a lease without a TTL", Metadata: map[string]string{}}
	}
	token, granted, answeredAt := tokenFromProto(res.GetToken()), res.GetTtl().AsDuration(), time.Now()
	// The deadline counts from the Acquire's send, and a wait in line uses it up: the TTL started when
	// the lease was granted, at some unknown point before the answer. Then count from a renewal instead.
	if answeredAt.Sub(sentAt) > granted/3 {
		if sentAt, granted, answeredAt, err = c.confirm(token); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		c.release(token)
		return nil, canceled(ctx, resource)
	}
	k := newKeeper(c, token.LeaseID, granted, false, sentAt, answeredAt)
	k.lockDelay = o.LockDelay > 0 || res.GetLockDelay() != nil
	l := newLease(c, ctx, o.LeaseContext, token, k)
	c.emit(Event{Type: EventAcquired, Token: token, TTL: granted, ValidUntil: l.ValidUntil()})
	k.start(sentAt)
	return l, nil
}

// acquireOnSession is an acquisition on the client's session of that TTL (opened if there is none, or
// if it was lost). Nil and no error when the session already holds or waits for the resource
// (ALREADY_ACQUIRED): a session takes a resource once at a time, so that acquisition goes on a lease of
// its own, as without sessions.
func (c *Client) acquireOnSession(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	startedAt := time.Now()
	for attempt := 1; ; attempt++ {
		session, err := c.session(ctx, o.TTL)
		if err != nil {
			return nil, err
		}
		// A second attempt (the first one's session was lost) waits only for what is left of the wait.
		waitTimeout := o.WaitTimeout
		if o.Wait && waitTimeout > 0 {
			waitTimeout = max(time.Millisecond, waitTimeout-time.Since(startedAt))
		}
		res, err := c.acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource, Holder: o.Holder, Wait: o.Wait, SessionId: session.id, Mode: o.mode(), Value: o.Value, MaxHolders: int32(o.MaxHolders)}, waitTimeout)
		var se *StatusError
		var notFound *LeaseNotFoundError
		switch {
		case errors.As(err, &se) && se.Reason == "ALREADY_ACQUIRED":
			return nil, nil
		case err != nil && ctx.Err() != nil:
			// Cancelled before the answer came: the server may have granted it, the answer on its way.
			go c.releaseUnanswered(resource, session.id)
			return nil, err
		case errors.As(err, &notFound):
			// The session is gone (it expired, or was closed, behind the client's back): lost, with its leases.
			session.lose(LostNotFound, err)
			if attempt == 1 {
				continue
			}
			return nil, err
		case err != nil:
			return nil, err
		}
		token := tokenFromProto(res.GetToken())
		if session.expireIfPassed() {
			// The session was lost while the Acquire was on its way; the acquisition went with it.
			if attempt == 1 {
				continue
			}
			return nil, &UnavailableError{&StatusError{Code: codes.Unavailable, Message: fmt.Sprintf("acquire of %q: its session was lost twice while acquiring; try again", resource), Metadata: map[string]string{}}}
		}
		if ctx.Err() != nil {
			c.release(token)
			return nil, canceled(ctx, resource)
		}
		l := newLease(c, ctx, o.LeaseContext, token, session)
		c.emit(Event{Type: EventAcquired, Token: token, TTL: session.ttl, ValidUntil: l.ValidUntil()})
		return l, nil
	}
}

// session is the open session of this TTL, shared; opened once however many acquisitions ask at once.
func (c *Client) session(ctx context.Context, ttl time.Duration) (*keeper, error) {
	// etcd grants whole seconds, so TTLs that round up to the same second share a session.
	key := int64((ttl + time.Second - 1) / time.Second)
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, &CanceledError{&StatusError{Code: codes.Canceled, Message: "the client is closed", Metadata: map[string]string{}}}
		}
		op := c.sessions[key]
		if op == nil {
			op = &opening{done: make(chan struct{})}
			c.sessions[key] = op
			c.mu.Unlock()
			op.k, op.err = c.openSession(context.WithoutCancel(ctx), ttl)
			close(op.done)
			if op.err != nil {
				c.mu.Lock()
				if c.sessions[key] == op {
					delete(c.sessions, key)
				}
				c.mu.Unlock()
			}
			return op.k, op.err
		}
		c.mu.Unlock()
		select {
		case <-op.done:
		case <-ctx.Done():
			return nil, canceled(ctx, "")
		}
		if op.err != nil {
			return nil, op.err
		}
		if !op.k.expireIfPassed() {
			return op.k, nil
		}
		// Lost (expireIfPassed forgot it): the next turn opens a new one.
	}
}

// forgetSession drops a session that ended, so that the next acquisition of its TTL opens a new one.
func (c *Client) forgetSession(k *keeper) {
	if !k.session {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, op := range c.sessions {
		if op.k == k {
			delete(c.sessions, key)
		}
	}
}

// WithLease runs fn under a lease on resource, with the lease's context (cancelled on loss), and
// releases the lease afterwards, also when fn fails (then fn's error is returned). If the lease was lost
// before fn returned, it returns the *LeaseLostError. ctx bounds the whole scope, the work included: its
// end ends the lease (LostCanceled, as AcquireOptions.LeaseContext) and so cancels fn's context.
func WithLease(ctx context.Context, c *Client, resource string, o AcquireOptions, fn func(ctx context.Context, l *Lease) error) error {
	if o.LeaseContext == nil {
		o.LeaseContext = ctx
	}
	l, err := c.Acquire(ctx, resource, o)
	if err != nil {
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))
	if err := fn(l.Context(), l); err != nil {
		return err
	}
	var lost *LeaseLostError
	if errors.As(l.Err(), &lost) && lost.Why != LostReleased {
		return lost
	}
	return nil
}

// confirm renews a freshly granted lease with Renew, sent now: what its deadline then counts from. The
// lease is released if that fails.
func (c *Client) confirm(token Token) (sentAt time.Time, ttl time.Duration, answeredAt time.Time, err error) {
	sentAt = time.Now()
	var res *fencekeeperv1.RenewResponse
	err = c.call(context.Background(), true, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.lease.Renew(ctx, &fencekeeperv1.RenewRequest{LeaseId: token.LeaseID})
		return err
	})
	if err != nil {
		c.release(token)
		return
	}
	return sentAt, res.GetTtl().AsDuration(), time.Now(), nil
}

// releaseUnanswered follows an Acquire on a session that was cancelled before its answer came: the
// server may have granted it, with the answer on its way. A session holds a resource once at a time, so
// a holding of resource on that session that this client never handed out is that grant: given back, or
// it would stand as long as the session. Best effort: if no server answers, it ends with the session.
func (c *Client) releaseUnanswered(resource string, sessionID int64) {
	d, err := c.Describe(context.Background(), resource)
	if err != nil {
		return
	}
	c.mu.Lock()
	ours := map[[2]int64]bool{}
	for l := range c.leases {
		ours[[2]int64{l.token.LeaseID, l.token.Generation}] = true
	}
	c.mu.Unlock()
	tokens := []Token{}
	for _, h := range d.Holders {
		tokens = append(tokens, h.Token)
	}
	if d.Token != nil {
		tokens = append(tokens, *d.Token)
	}
	for _, t := range tokens {
		k := [2]int64{t.LeaseID, t.Generation}
		if t.LeaseID != sessionID || ours[k] {
			continue
		}
		ours[k] = true // a holder listed twice (exclusive: Token and Holders) is released once
		c.release(t)
	}
}
