// Package fencekeeper is the Go client of fencekeeper: it acquires leases on named resources, keeps
// them alive on one KeepAlive stream per client, tells the moment a lease can no longer be assumed held
// (Lease.Done, Lease.Context), and writes to the fenced store with the lease's token. Its semantics are
// those of docs/client-semantics.md, shared by the Go, Python, Java and TypeScript clients.
package fencekeeper

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc"
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
	// OwnLeases gives every acquisition an etcd lease of its own. By default (false), acquisitions go on
	// sessions, as etcd's concurrency.Mutex, Curator and Chubby lock: one per TTL (in whole seconds),
	// opened on first use, shared by every acquisition of that TTL, renewed with one renewal for all of
	// them, closed by Close. AcquireOptions.OwnLease asks for a lease of its own for one acquisition.
	// See docs/client.md, "Sessions", for when to choose which.
	OwnLeases bool
	// OnEvent, if set, is told what the client does, for logs and metrics. It is called from the
	// client's goroutines and must not block.
	OnEvent func(Event)
	// DisableWriteCoalescing sends every Put and Delete (the store's and the leases') as a call of its own.
	// By default, concurrent writes are coalesced: a write that finds a call free goes out at once as a
	// plain Put or Delete, and the writes made while two calls are in flight go together in the next
	// FencedStoreService.Batch call. No timer, so a lone write waits for nothing; each write keeps its own
	// answer and typed error, as if sent alone. A server without Batch gets one call per write.
	DisableWriteCoalescing bool
	// DisableLockCoalescing sends every Acquire and Release as a call of its own. By default, concurrent
	// acquisitions and releases are coalesced as writes are: one that finds a call free goes out at once,
	// and those made while two calls are in flight go together in the next LeaseService.LeaseBatch call,
	// each with its own answer. An acquisition that waits in line is never held up by the others. A
	// server without LeaseBatch gets one call each.
	DisableLockCoalescing bool
	// DialOptions are added to those of every connection the client opens (interceptors for metrics or
	// logs, say), after its own.
	DialOptions []grpc.DialOption
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
	writes      *writeBatcher // nil with Options.DisableWriteCoalescing
	locks       *lockBatcher  // nil with Options.DisableLockCoalescing

	mu       sync.Mutex
	leases   map[*Lease]struct{}
	sessions map[int64]*opening // by TTL in whole seconds; nil with Options.OwnLeases
	closed   bool
}

// New makes a client. It connects lazily: a server that cannot be reached fails the first call.
func New(o Options) (*Client, error) {
	urls := o.Servers
	if len(urls) == 0 {
		for _, url := range strings.Split(os.Getenv("FENCEKEEPER_URL"), ",") {
			if url = strings.TrimSpace(url); url != "" {
				urls = append(urls, url)
			}
		}
	}
	if len(urls) == 0 {
		urls = []string{DefaultURL}
	}
	s, err := newServers(urls, o.Credentials, o.DialOptions)
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
	if !o.OwnLeases {
		c.sessions = map[int64]*opening{}
	}
	if !o.DisableLockCoalescing {
		c.locks = &lockBatcher{c: c}
	}
	if !o.DisableWriteCoalescing {
		c.writes = &writeBatcher{c: c}
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

// Description is who holds a resource, with which token, for how much longer, and how many wait.
type Description struct {
	// Held: exclusively, or by shared holders.
	Held bool
	// Holder, Token and TTL are the exclusive holder's; unset when the holders are shared.
	Holder string
	Token  *Token
	// TTL left on the holder's lease, as etcd reports it (whole seconds).
	TTL time.Duration
	// Holders is every holder: the exclusive one, or the shared ones, oldest first.
	Holders    []Holder
	Waiters    int
	Fence      int64
	LastIssued int64
	// LockDelay is the holder's lock-delay, or, while the resource is in a lock-delay, the one being served.
	LockDelay time.Duration
	// LockDelayUntil is set while the resource is in a lock-delay (its holder's lease expired): about when it ends.
	LockDelayUntil time.Time
	// Value is the exclusive holder's published value (AcquireOptions.Value, Lease.Proclaim).
	Value []byte
	// MaxHolders is the shared holders' semaphore size (AcquireOptions.MaxHolders), 0 when they are not a semaphore's.
	MaxHolders int
}

// Holder is one holder of a resource.
type Holder struct {
	Holder string
	Token  Token
	// TTL left on its lease, as etcd reports it (whole seconds).
	TTL time.Duration
	// Principal is the holder's authenticated principal, when the server has authentication on.
	Principal string
	// Value is the value it published (AcquireRequest.value, or its latest Proclaim); empty without one.
	Value []byte
}

func holdersFromProto(hs []*fencekeeperv1.Holder) []Holder {
	var out []Holder
	for _, h := range hs {
		out = append(out, Holder{Holder: h.GetHolder(), Token: tokenFromProto(h.GetToken()), TTL: h.GetTtl().AsDuration(), Principal: h.GetHolderPrincipal(), Value: h.GetValue()})
	}
	return out
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
	out := Description{Held: d.GetHeld(), Holder: d.GetHolder(), TTL: d.GetTtl().AsDuration(), Waiters: int(d.GetWaiters()), Fence: d.GetFence(), LastIssued: d.GetLastIssued(),
		Value: d.GetValue(), MaxHolders: int(d.GetMaxHolders())}
	if d.GetToken() != nil {
		t := tokenFromProto(d.GetToken())
		out.Token = &t
	}
	out.Holders = holdersFromProto(d.GetHolders())
	if d.GetLockDelay() != nil {
		out.LockDelay = d.GetLockDelay().AsDuration()
	}
	if d.GetLockDelayUntil() != nil {
		out.LockDelayUntil = d.GetLockDelayUntil().AsTime()
	}
	return out, nil
}

// Ownership is the state of a resource after one change of holder.
type Ownership struct {
	// Held says whether the resource is held, exclusively or by shared holders.
	Held bool
	// Holder, Token, Principal and Value are the exclusive holder's; unset when the holders are shared.
	// A Proclaim of the same holder is a change of its own: the same token, a new Value.
	Holder    string
	Token     *Token
	Principal string
	Value     []byte
	// Holders is every holder after this change (TTL unset); Joined and Left the shared holders that
	// joined and left since the previous change.
	Holders []Holder
	Joined  []Holder
	Left    []Holder
	// MaxHolders is the shared holders' semaphore size (AcquireRequest.max_holders), 0 when they are not a semaphore's.
	MaxHolders int
	// Revision is the etcd revision at which this state took effect.
	Revision int64
	// LockDelay is the new holder's lock-delay, or the one being served while LockDelayUntil is set.
	LockDelay time.Duration
	// LockDelayUntil is set when the resource has entered a lock-delay: about when it ends.
	LockDelayUntil time.Time
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
			o := Ownership{Held: msg.GetHeld(), Holder: msg.GetHolder(), Principal: msg.GetHolderPrincipal(), Value: msg.GetValue(),
				Holders: holdersFromProto(msg.GetHolders()), Joined: holdersFromProto(msg.GetJoined()), Left: holdersFromProto(msg.GetLeft()),
				MaxHolders: int(msg.GetMaxHolders()), Revision: msg.GetRevision(), LockDelay: msg.GetLockDelay().AsDuration()}
			if msg.GetLockDelayUntil() != nil {
				o.LockDelayUntil = msg.GetLockDelayUntil().AsTime()
			}
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

// release gives a lease up on the server, at most cleanupsInFlight at a time. It never fails: gone
// already, or no server answers, the lease ends at its TTL with its renewals stopped.
func (c *Client) release(token Token) {
	c.cleanups <- struct{}{}
	defer func() { <-c.cleanups }()
	if c.locks != nil {
		_ = c.locks.release(context.Background(), token.proto())
		return
	}
	_ = c.releaseCall(context.Background(), token.proto())
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
