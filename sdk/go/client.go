// Package fencekeeper is the Go client of fencekeeper: it acquires leases on named resources, keeps
// them alive on one KeepAlive stream per client, tells the moment a lease can no longer be assumed held
// (Lease.Done, Lease.Context), and writes to the fenced store with the lease's token. Its semantics are
// those of docs/client-semantics.md, shared by the Go, Python, Java and TypeScript clients.
package fencekeeper

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	// DefaultURL is the server when neither Options.Servers nor FENCEKEEPER_URL names one.
	DefaultURL = "http://127.0.0.1:50051"
	// DefaultTTL is the TTL of an acquisition that gives none.
	DefaultTTL = 10 * time.Second
	// cleanupsInFlight bounds the Release calls in flight, so that Close with thousands of leases does
	// not send thousands at once. A lease's Done closes when it is released, whatever its call waits for.
	cleanupsInFlight = 64
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Servers are the base URLs of replicas of one service, as http://host:port or https://host:port.
	// Default: FENCEKEEPER_URL (comma-separated), else DefaultURL.
	Servers []string
	// Holder is the label sent with Acquire. Default "<hostname>:<pid>".
	Holder string
	// DriftMargin is subtracted from every lease deadline. Zero: DefaultDriftMargin (100 ms + 1% of the TTL).
	DriftMargin time.Duration
	// CallTimeout is the deadline of calls that do not wait. Default 15 s.
	CallTimeout time.Duration
	// FenceMode is that of writes through a lease unless a call says otherwise. Default FenceLive.
	FenceMode FenceMode
	// Backoff of the KeepAlive stream's reconnections. Default 100 ms doubling to 2 s, with jitter.
	Backoff Backoff
	// Credentials for a server with authentication on.
	Credentials Credentials
	// Sessions puts acquisitions on sessions: one per TTL (in whole seconds), opened on first use,
	// shared by every acquisition of that TTL, renewed with one renewal for all of them, closed by Close.
	// Default false: each acquisition has an etcd lease of its own. See docs/client.md, "Sessions", for
	// what changes.
	Sessions bool
	// OnEvent, if set, is told what the client does, for logs and metrics. It is called from the
	// client's goroutines and must not block.
	OnEvent func(Event)
}

// AcquireOptions are those of one acquisition. The zero value fails fast with a TTL of DefaultTTL.
type AcquireOptions struct {
	// TTL of the lease; etcd grants whole seconds, at least 2 s. Default DefaultTTL.
	TTL time.Duration
	// Wait: false fails with *ResourceHeldError if the resource is held; true waits in line.
	Wait bool
	// WaitTimeout, with Wait, is the longest wait (then *TimeoutError). Zero: as long as ctx allows.
	WaitTimeout time.Duration
	// Holder overrides Options.Holder.
	Holder string
}

// Client acquires leases and keeps them on one KeepAlive stream. Safe for concurrent use.
type Client struct {
	servers     *servers
	keepAlive   *keepAlive
	holder      string
	driftMargin time.Duration
	callTimeout time.Duration
	fenceMode   FenceMode
	onEvent     func(Event)
	cleanups    chan struct{}

	mu       sync.Mutex
	leases   map[*Lease]struct{}
	sessions map[int64]*opening // by TTL in whole seconds; nil without Options.Sessions
	closed   bool
}

// opening is a session being opened, or open: the acquisitions that ask at the same time wait for one.
type opening struct {
	done chan struct{}
	k    *keeper
	err  error
}

// New makes a client. It connects lazily: a server that cannot be reached fails the first call.
func New(o Options) (*Client, error) {
	urls := o.Servers
	if len(urls) == 0 {
		urls = strings.Split(os.Getenv("FENCEKEEPER_URL"), ",")
		if os.Getenv("FENCEKEEPER_URL") == "" {
			urls = []string{DefaultURL}
		}
	}
	s, err := newServers(urls, o.Credentials)
	if err != nil {
		return nil, err
	}
	c := &Client{
		servers:     s,
		holder:      o.Holder,
		driftMargin: o.DriftMargin,
		callTimeout: o.CallTimeout,
		fenceMode:   o.FenceMode,
		onEvent:     o.OnEvent,
		cleanups:    make(chan struct{}, cleanupsInFlight),
		leases:      map[*Lease]struct{}{},
	}
	if o.Sessions {
		c.sessions = map[int64]*opening{}
	}
	if c.holder == "" {
		host, _ := os.Hostname()
		c.holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.callTimeout == 0 {
		c.callTimeout = 15 * time.Second
	}
	if c.fenceMode == FenceUnspecified {
		c.fenceMode = FenceLive
	}
	if o.Backoff.Base == 0 {
		o.Backoff.Base = 100 * time.Millisecond
	}
	if o.Backoff.Max == 0 {
		o.Backoff.Max = 2 * time.Second
	}
	c.keepAlive = newKeepAlive(s, o.Backoff, c.emit)
	return c, nil
}

// Acquire acquires a resource and keeps its lease alive until it is released or lost. ctx bounds the
// call and, once the lease is granted, the lease: when ctx ends, the lease is released (LostCanceled).
// Bound only the wait with AcquireOptions.WaitTimeout.
func (c *Client) Acquire(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
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
	if c.sessions != nil {
		if l, err := c.acquireOnSession(ctx, resource, o); l != nil || err != nil {
			return l, err
		}
	}
	return c.acquireOwn(ctx, resource, o)
}

// acquire sends one Acquire, with a deadline that leaves room for the wait.
func (c *Client) acquire(ctx context.Context, req *fencekeeperv1.AcquireRequest, waitTimeout time.Duration) (*fencekeeperv1.AcquireResponse, error) {
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
	if err == nil && res.GetToken() == nil {
		err = &StatusError{Code: codes.Internal, Message: "the server granted a lease without a token", Metadata: map[string]string{}}
	}
	return res, err
}

func canceled(ctx context.Context, resource string) error {
	return &CanceledError{&StatusError{Code: codes.Canceled, Message: fmt.Sprintf("acquire of %q was canceled", resource), Metadata: map[string]string{}, Err: context.Cause(ctx)}}
}

// acquireOwn is an acquisition on an etcd lease of its own.
func (c *Client) acquireOwn(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	req := &fencekeeperv1.AcquireRequest{Resource: resource, Ttl: durationpb.New(o.TTL), Holder: o.Holder, Wait: o.Wait}
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
	l := newLease(c, ctx, token, k)
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
		res, err := c.acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource, Holder: o.Holder, Wait: o.Wait, SessionId: session.id}, waitTimeout)
		var se *StatusError
		var notFound *LeaseNotFoundError
		switch {
		case errors.As(err, &se) && se.Reason == "ALREADY_ACQUIRED":
			return nil, nil
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
		l := newLease(c, ctx, token, session)
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
// before fn returned, it returns the *LeaseLostError.
func WithLease(ctx context.Context, c *Client, resource string, o AcquireOptions, fn func(ctx context.Context, l *Lease) error) error {
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

// Description is who holds a resource, with which token, for how much longer, and how many wait.
type Description struct {
	Held   bool
	Holder string
	Token  *Token
	// TTL left on the holder's lease, as etcd reports it (whole seconds).
	TTL        time.Duration
	Waiters    int
	Fence      int64
	LastIssued int64
}

// Describe says who holds a resource.
func (c *Client) Describe(ctx context.Context, resource string) (Description, error) {
	var d *fencekeeperv1.DescribeResponse
	err := c.call(ctx, true, func(ctx context.Context, cn *conn) (err error) {
		d, err = cn.lease.Describe(ctx, &fencekeeperv1.DescribeRequest{Resource: resource})
		return err
	})
	if err != nil {
		return Description{}, err
	}
	out := Description{Held: d.GetHeld(), Holder: d.GetHolder(), TTL: d.GetTtl().AsDuration(), Waiters: int(d.GetWaiters()), Fence: d.GetFence(), LastIssued: d.GetLastIssued()}
	if d.GetToken() != nil {
		t := tokenFromProto(d.GetToken())
		out.Token = &t
	}
	return out, nil
}

// Ownership is the state of a resource after one change of holder.
type Ownership struct {
	Held     bool
	Holder   string
	Token    *Token
	Revision int64
}

// Observe yields the ownership of a resource now, then each change of holder, until ctx ends (which
// ends the iteration without an error) or the stream fails (yielded as the last error).
func (c *Client) Observe(ctx context.Context, resource string) iter.Seq2[Ownership, error] {
	return func(yield func(Ownership, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cn, err := c.servers.connection(callsChannel, "")
		if err != nil {
			yield(Ownership{}, err)
			return
		}
		st, err := cn.lease.Observe(ctx, &fencekeeperv1.ObserveRequest{Resource: resource})
		for err == nil {
			var msg *fencekeeperv1.ObserveResponse
			if msg, err = st.Recv(); err != nil {
				break
			}
			o := Ownership{Held: msg.GetHeld(), Holder: msg.GetHolder(), Revision: msg.GetRevision()}
			if msg.GetToken() != nil {
				t := tokenFromProto(msg.GetToken())
				o.Token = &t
			}
			if !yield(o, nil) {
				return
			}
		}
		if ctx.Err() == nil {
			yield(Ownership{}, toError(err))
		}
	}
}

// ReleaseToken releases the acquisition of a token, for a program that keeps tokens itself (a Lease's
// own Release is what a holder calls). Unlike Lease.Release it reports the server's answer: a
// *LeaseNotFoundError when the lease is gone already.
func (c *Client) ReleaseToken(ctx context.Context, token Token) error {
	return c.call(ctx, true, func(ctx context.Context, cn *conn) error {
		_, err := cn.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: token.proto()})
		return err
	})
}

// Close releases every lease still held and closes every session (each Done closes at once), then
// closes the connections.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	openings := make([]*opening, 0, len(c.sessions))
	for _, op := range c.sessions {
		openings = append(openings, op)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	// A session's leases end with it, in one CloseSession; what is left has leases of its own.
	for _, op := range openings {
		<-op.done
		if op.k != nil {
			op.k.lose(LostReleased, nil)
			wg.Go(func() { op.k.waitCleaned() })
		}
	}
	c.mu.Lock()
	leases := make([]*Lease, 0, len(c.leases))
	for l := range c.leases {
		leases = append(leases, l)
	}
	c.mu.Unlock()
	for _, l := range leases {
		wg.Go(func() { l.Release(context.Background()) })
	}
	wg.Wait()
	c.keepAlive.close()
	c.servers.close()
	return nil
}

// call runs a unary call with the client's call timeout.
func (c *Client) call(ctx context.Context, repeatable bool, call func(ctx context.Context, cn *conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	return c.servers.run(repeatable, func(cn *conn) error { return call(ctx, cn) })
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

// release gives a lease up on the server, at most cleanupsInFlight at a time. It never fails: gone
// already, or no server answers, the lease ends at its TTL with its renewals stopped.
func (c *Client) release(token Token) {
	c.cleanups <- struct{}{}
	defer func() { <-c.cleanups }()
	_ = c.call(context.Background(), true, func(ctx context.Context, cn *conn) error {
		_, err := cn.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: token.proto()})
		return err
	})
}

func (c *Client) forget(l *Lease) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

func (c *Client) drift(ttl time.Duration) time.Duration {
	if c.driftMargin != 0 {
		return c.driftMargin
	}
	return DefaultDriftMargin(ttl)
}

func (c *Client) emit(e Event) {
	if c.onEvent != nil {
		e.At = time.Now()
		c.onEvent(e)
	}
}
