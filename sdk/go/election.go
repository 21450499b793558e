package fencekeeper

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
)

// Leader election on top of leases (docs/election.md): a campaign is an exclusive Acquire that waits in
// line and publishes a value; the leader is the exclusive holder; followers observe it. Lead is the loop
// of client-go's leaderelection. The leader's context is the lease's, so it is cancelled at ValidUntil
// (the send time of the last confirmed renewal + TTL - drift margin), before etcd can expire the lease
// and grant anyone else.

// Leader is the leader of a resource as followers see it.
type Leader struct {
	Holder string
	// Token orders leaders (its generation), and the fenced store refuses a deposed leader's writes.
	Token Token
	// Value is what it published (Campaign, Proclaim); empty without one.
	Value []byte
}

// LeaderChange is one change ObserveLeaders gives: a new leader, a new value of the same one, or none.
type LeaderChange struct {
	// Leader is nil while nobody leads (the resource is free, in a lock-delay, or held by shared holders).
	Leader *Leader
	// Revision is the etcd revision at which it took effect (after a reconnection, the one the stream started at).
	Revision int64
}

// CampaignOptions are AcquireOptions: one options value for every entry point. The name stays for the
// code written when a campaign had options of its own, whose fields AcquireOptions all have.
type CampaignOptions = AcquireOptions

// Leadership is an elected campaign: the leader's lease (its writes go under the leader's token).
type Leadership struct {
	*Lease
}

// Context is cancelled, with the *LeaseLostError as its cause, once this process can no longer assume
// it leads. Its Err and Done look at the clock first, so code that checks it after a pause sees the
// loss on its first look, before any timer of the client has run.
func (l *Leadership) Context() context.Context { return leaderContext{l.Lease.Context(), l.Lease} }

// Resign gives leadership up now, so that the next campaigner is elected at once. Idempotent.
func (l *Leadership) Resign(ctx context.Context) { l.Release(ctx) }

type leaderContext struct {
	context.Context
	l *Lease
}

func (c leaderContext) Done() <-chan struct{} {
	c.l.look()
	return c.Context.Done()
}

func (c leaderContext) Err() error {
	c.l.look()
	return c.Context.Err()
}

// Proclaim publishes a new value without giving the resource up (LeaseService.Proclaim), and returns
// the etcd revision at which it took effect. It checks the lease first (a lost lease sends nothing);
// refused as stale (a newer holder was granted, or the lease is gone), it ends the lease, as a refused
// write does.
func (l *Lease) Proclaim(ctx context.Context, value []byte) (int64, error) {
	var revision int64
	_, err := l.write(func() (Commit, error) {
		err := l.c.call(ctx, true, func(ctx context.Context, cn *conn) error {
			res, err := cn.lease.Proclaim(ctx, &fencekeeperv1.ProclaimRequest{Token: l.token.proto(), Value: value})
			revision = res.GetRevision()
			return err
		})
		return Commit{}, err
	})
	return revision, err
}

// Campaign waits in line for resource, exclusively, publishing value, and returns once elected. The
// options are Acquire's, with Wait implied: o.NoWait fails fast instead (*ResourceHeldError while someone
// leads), o.WaitTimeout bounds the wait (zero: until elected or ctx ends). ctx bounds the wait only;
// o.LeaseContext, if set, ends the leadership when it ends. A campaign is exclusive and publishes value:
// o.Shared, o.MaxHolders and o.Value must be unset (*InvalidArgumentError otherwise). It is on a lease of
// its own, also on a client with sessions (as in the other libraries, where it is their default): a
// leadership must be lost alone, and its leader told at its next renewal when it is released behind its
// back, which a session's renewal would not tell. (OwnLease's false is its zero value in Go, so it cannot
// ask for the session here.)
func (c *Client) Campaign(ctx context.Context, resource string, value []byte, o AcquireOptions) (*Leadership, error) {
	if o.Shared || o.MaxHolders != 0 || o.Value != nil {
		return nil, &InvalidArgumentError{&StatusError{Code: codes.InvalidArgument, Message: "Campaign is exclusive and publishes its value argument: AcquireOptions.Shared, MaxHolders and Value must be unset", Metadata: map[string]string{}}}
	}
	o.Wait, o.Value, o.OwnLease = !o.NoWait, value, true
	l, err := c.Acquire(ctx, resource, o)
	if err != nil {
		return nil, err
	}
	return &Leadership{l}, nil
}

// Leader is the current leader, or nil when nobody holds the resource exclusively.
func (c *Client) Leader(ctx context.Context, resource string) (*Leader, error) {
	d, err := c.Describe(ctx, resource)
	if err != nil || d.Token == nil {
		return nil, err
	}
	return &Leader{Holder: d.Holder, Token: *d.Token, Value: d.Value}, nil
}

// ObserveLeaders yields the leader now, then each change of leader or of its value, in order, until
// ctx ends (which ends the iteration without an error). A stream the server or the network ends is
// opened again with backoff, and starts with the current leader, yielded only if it differs from the
// last one yielded. An error that reconnecting cannot mend (bad arguments, permission) is yielded last.
func (c *Client) ObserveLeaders(ctx context.Context, resource string) iter.Seq2[LeaderChange, error] {
	return func(yield func(LeaderChange, error) bool) {
		var last *Leader
		given := false
		for failures := 0; ctx.Err() == nil; {
			for o, err := range c.Observe(ctx, resource) {
				if err != nil {
					if !reconnectable(err) {
						yield(LeaderChange{}, err)
						return
					}
					failures++
					break
				}
				failures = 0
				var now *Leader
				if o.Token != nil {
					now = &Leader{Holder: o.Holder, Token: *o.Token, Value: o.Value}
				}
				if given && sameLeader(last, now) {
					continue
				}
				last, given = now, true
				if !yield(LeaderChange{Leader: now, Revision: o.Revision}, nil) {
					return
				}
			}
			// The stream ended (a server draining, a network cut): open it again.
			select {
			case <-ctx.Done():
			case <-time.After(leaderBackoff.delay(max(failures, 1))):
			}
		}
	}
}

var leaderBackoff = Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second}

// reconnectable: an Observe stream ended by something other than a refusal of the request itself.
func reconnectable(err error) bool {
	var invalid *InvalidArgumentError
	var denied *PermissionDeniedError
	var unauthenticated *UnauthenticatedError
	return !errors.As(err, &invalid) && !errors.As(err, &denied) && !errors.As(err, &unauthenticated)
}

func sameLeader(a, b *Leader) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Token.Generation == b.Token.Generation && a.Holder == b.Holder && string(a.Value) == string(b.Value)
}

// LeadCallbacks are Lead's, in client-go's style (OnStartedLeading, OnStoppedLeading, OnNewLeader).
type LeadCallbacks struct {
	// OnElected runs while this process leads. ctx is the leadership's Context: cancelled before anyone
	// else can be elected; stop acting on it. Leadership lasts until ctx ends, whether or not OnElected
	// returns earlier; if it returns an error, leadership is resigned. Never runs twice at once in one
	// process for one resource: the next term's OnElected waits for this one to return.
	OnElected func(ctx context.Context, token Token, l *Leadership) error
	// OnDeposed: leadership ended (lost, resigned, or Lead stopping), after its OnElected returned; once
	// per OnElected. err is the *LeaseLostError.
	OnDeposed func(err error)
	// OnNewLeader: another leader, this process, or nobody (nil) leads now; each change of leader, not of value.
	OnNewLeader func(l *Leader)
}

// LeadOptions are Lead's: those of each campaign, and its value (Value, or ValueFunc made afresh each time).
type LeadOptions struct {
	TTL       time.Duration
	Holder    string
	LockDelay time.Duration
	Value     []byte
	ValueFunc func() []byte
}

// terms are the OnElected calls running in this process, by resource: the next waits for the last to return.
var terms = struct {
	sync.Mutex
	last map[string]chan struct{}
}{last: map[string]chan struct{}{}}

// Lead campaigns for resource until ctx ends: each time elected, runs cb.OnElected with the leadership's
// context; after a loss, once OnElected returned, calls cb.OnDeposed and campaigns again. ctx's end
// resigns a leadership and returns nil once OnElected returned. It returns an error only for a refusal
// that campaigning again cannot mend (bad arguments, permission denied); UNAVAILABLE, deadlines, a lease
// lost while waiting and a lock-delay are retried with backoff.
func (c *Client) Lead(ctx context.Context, resource string, cb LeadCallbacks, o LeadOptions) error {
	following, stopFollowing := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		if cb.OnNewLeader != nil {
			follow(following, c, resource, cb.OnNewLeader)
		}
	}()
	defer func() {
		stopFollowing()
		<-followed
	}()
	for failures := 0; ctx.Err() == nil; {
		value := o.Value
		if o.ValueFunc != nil {
			value = o.ValueFunc()
		}
		l, err := c.Campaign(ctx, resource, value, AcquireOptions{TTL: o.TTL, Holder: o.Holder, LockDelay: o.LockDelay, LeaseContext: ctx})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !retryableCampaign(err) {
				return err
			}
			failures++
			select {
			case <-ctx.Done():
			case <-time.After(leaderBackoff.delay(failures)):
			}
			continue
		}
		failures = 0
		serve(resource, l, cb)
	}
	return nil
}

// serve is one term: OnElected (after any earlier term of the resource in this process), then
// OnDeposed once the leadership is over.
func serve(resource string, l *Leadership, cb LeadCallbacks) {
	terms.Lock()
	before := terms.last[resource]
	mine := make(chan struct{})
	terms.last[resource] = mine
	terms.Unlock()
	defer func() {
		terms.Lock()
		if terms.last[resource] == mine {
			delete(terms.last, resource)
		}
		terms.Unlock()
		close(mine)
	}()
	if before != nil {
		<-before
	}
	// Lost while the earlier term finished: OnElected would start on an ended context; skip it, and
	// OnDeposed with it: that leadership was never this process's to act on.
	served := l.Held()
	if served && cb.OnElected != nil {
		if err := cb.OnElected(l.Context(), l.Token(), l); err != nil {
			// The elected code failed: a leader that no longer does its work should not keep others out.
			l.Resign(context.Background())
		}
	}
	<-l.Done()
	// Lost or canceled: wait for the release the loss started, so that nothing is left held.
	l.Resign(context.Background())
	if served && cb.OnDeposed != nil {
		cb.OnDeposed(l.Err())
	}
}

// follow calls onNewLeader for each change of leader (not of its value), until ctx ends. Best effort:
// leading goes on without it.
func follow(ctx context.Context, c *Client, resource string, onNewLeader func(*Leader)) {
	var last int64 = -1
	for change, err := range c.ObserveLeaders(ctx, resource) {
		if err != nil {
			return
		}
		var generation int64
		if change.Leader != nil {
			generation = change.Leader.Token.Generation
		}
		if generation == last {
			continue
		}
		last = generation
		onNewLeader(change.Leader)
	}
}

// retryableCampaign: a failure campaigning again could mend.
func retryableCampaign(err error) bool {
	var unavailable *UnavailableError
	var timeout *TimeoutError
	var notFound *LeaseNotFoundError
	var lockDelay *LockDelayError
	return errors.As(err, &unavailable) || errors.As(err, &timeout) || errors.As(err, &notFound) || errors.As(err, &lockDelay)
}
