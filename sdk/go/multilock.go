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

// AcquireAll acquires every resource or none, as Curator's InterProcessMultiLock does, in one
// LeaseService.AcquireAll call: the server takes them exclusively in the order of their names' bytes, so
// that two callers asking for overlapping sets cannot deadlock, and gives back what it took when one of
// them fails (the error is that resource's, as Acquire's: *ResourceHeldError, *TimeoutError, ...). With
// o.Wait it waits until it holds them all; o.WaitTimeout and ctx bound the wait for the whole set. It
// returns one Lease per resource, in the order given, each kept and released on its own, on the
// client's session unless o.OwnLease (or Options.OwnLeases). Of the options, TTL, Wait, WaitTimeout,
// Holder, OwnLease and LeaseContext apply; the others must be zero (*InvalidArgumentError otherwise).
func (c *Client) AcquireAll(ctx context.Context, resources []string, o AcquireOptions) ([]*Lease, error) {
	o.Wait = o.Wait && !o.NoWait
	if o.LockDelay != 0 || o.Shared || len(o.Value) > 0 || o.MaxHolders != 0 || o.Preempt {
		return nil, &InvalidArgumentError{&StatusError{Code: codes.InvalidArgument, Message: "AcquireAll takes exclusive acquisitions with TTL, Wait, WaitTimeout, Holder, OwnLease and LeaseContext only: LockDelay, Shared, Value, MaxHolders and Preempt must be unset", Metadata: map[string]string{}}}
	}
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
	if c.onSession(o.OwnLease, 0, false) {
		if ls, err := c.acquireAllOnSession(ctx, resources, o); ls != nil || err != nil {
			return ls, err
		}
	}
	return c.acquireAllOwn(ctx, resources, o)
}

// acquireAllCall sends one AcquireAll, with a deadline that leaves room for the wait.
func (c *Client) acquireAllCall(ctx context.Context, req *fencekeeperv1.AcquireAllRequest, waitTimeout time.Duration) (*fencekeeperv1.AcquireAllResponse, error) {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	switch {
	case !req.Wait:
		callCtx, cancel = context.WithTimeout(ctx, c.callTimeout)
	case waitTimeout > 0:
		req.WaitTimeout = durationpb.New(waitTimeout)
		callCtx, cancel = context.WithTimeout(ctx, c.callTimeout+waitTimeout)
	}
	defer cancel()
	var res *fencekeeperv1.AcquireAllResponse
	err := c.servers.run(false, func(cn *conn) (err error) {
		res, err = cn.lease.AcquireAll(callCtx, req)
		return err
	})
	if err == nil && len(res.GetAcquisitions()) != len(req.Resources) {
		err = &StatusError{Code: codes.Internal, Message: fmt.Sprintf("the server answered %d grants for %d resources", len(res.GetAcquisitions()), len(req.Resources)), Metadata: map[string]string{}}
	}
	for _, a := range res.GetAcquisitions() {
		if err == nil && a.GetToken() == nil {
			err = &StatusError{Code: codes.Internal, Message: "the server granted a lease without a token", Metadata: map[string]string{}}
		}
	}
	return res, err
}

func canceledAll(ctx context.Context, n int) error {
	return &CanceledError{&StatusError{Code: codes.Canceled, Message: fmt.Sprintf("acquire of %d resources was canceled", n), Metadata: map[string]string{}, Err: context.Cause(ctx)}}
}

// acquireAllOwn is AcquireAll on leases of their own, one each.
func (c *Client) acquireAllOwn(ctx context.Context, resources []string, o AcquireOptions) ([]*Lease, error) {
	req := &fencekeeperv1.AcquireAllRequest{Resources: resources, Ttl: durationpb.New(o.TTL), Holder: o.Holder, Wait: o.Wait}
	sentAt := time.Now()
	res, err := c.acquireAllCall(ctx, req, o.WaitTimeout)
	if err != nil {
		return nil, err
	}
	answeredAt := time.Now()
	type grant struct {
		token            Token
		ttl              time.Duration
		sent, answeredAt time.Time
	}
	grants := make([]grant, len(res.GetAcquisitions()))
	for i, a := range res.GetAcquisitions() {
		grants[i] = grant{tokenFromProto(a.GetToken()), a.GetTtl().AsDuration(), sentAt, answeredAt}
	}
	// As for one acquisition: after a long wait, each deadline counts from a renewal sent now.
	var failed error
	for i := range grants {
		g := &grants[i]
		if failed != nil {
			c.release(g.token)
			continue
		}
		if answeredAt.Sub(sentAt) > g.ttl/3 {
			if g.sent, g.ttl, g.answeredAt, failed = c.confirm(g.token); failed != nil {
				for _, done := range grants[:i] {
					c.release(done.token)
				}
			}
		}
	}
	if failed != nil {
		return nil, failed
	}
	if ctx.Err() != nil {
		for _, g := range grants {
			c.release(g.token)
		}
		return nil, canceledAll(ctx, len(resources))
	}
	leases := make([]*Lease, len(grants))
	for i, g := range grants {
		k := newKeeper(c, g.token.LeaseID, g.ttl, false, g.sent, g.answeredAt)
		leases[i] = newLease(c, ctx, o.LeaseContext, g.token, k)
		c.emit(Event{Type: EventAcquired, Token: g.token, TTL: g.ttl, ValidUntil: leases[i].ValidUntil()})
		k.start(g.sent)
	}
	return leases, nil
}

// acquireAllOnSession is AcquireAll on the client's session of that TTL. Nil and no error when the
// session already holds or waits for one of the resources: then the set goes on leases of their own.
func (c *Client) acquireAllOnSession(ctx context.Context, resources []string, o AcquireOptions) ([]*Lease, error) {
	startedAt := time.Now()
	for attempt := 1; ; attempt++ {
		session, err := c.session(ctx, o.TTL)
		if err != nil {
			return nil, err
		}
		waitTimeout := o.WaitTimeout
		if o.Wait && waitTimeout > 0 {
			waitTimeout = max(time.Millisecond, waitTimeout-time.Since(startedAt))
		}
		res, err := c.acquireAllCall(ctx, &fencekeeperv1.AcquireAllRequest{Resources: resources, Holder: o.Holder, Wait: o.Wait, SessionId: session.id}, waitTimeout)
		var se *StatusError
		var notFound *LeaseNotFoundError
		switch {
		case errors.As(err, &se) && se.Reason == "ALREADY_ACQUIRED":
			return nil, nil
		case err != nil && ctx.Err() != nil:
			// Cancelled before the answer came: the server may have granted them, the answer on its way.
			for _, r := range resources {
				go c.releaseUnanswered(r, session.id)
			}
			return nil, err
		case errors.As(err, &notFound):
			session.lose(LostNotFound, err)
			if attempt == 1 {
				continue
			}
			return nil, err
		case err != nil:
			return nil, err
		}
		tokens := make([]Token, len(res.GetAcquisitions()))
		for i, a := range res.GetAcquisitions() {
			tokens[i] = tokenFromProto(a.GetToken())
		}
		if session.expireIfPassed() {
			if attempt == 1 {
				continue
			}
			return nil, &UnavailableError{&StatusError{Code: codes.Unavailable, Message: fmt.Sprintf("acquire of %d resources: their session was lost twice while acquiring; try again", len(resources)), Metadata: map[string]string{}}}
		}
		if ctx.Err() != nil {
			for _, t := range tokens {
				c.release(t)
			}
			return nil, canceledAll(ctx, len(resources))
		}
		leases := make([]*Lease, len(tokens))
		for i, t := range tokens {
			leases[i] = newLease(c, ctx, o.LeaseContext, t, session)
			c.emit(Event{Type: EventAcquired, Token: t, TTL: session.ttl, ValidUntil: leases[i].ValidUntil()})
		}
		return leases, nil
	}
}
