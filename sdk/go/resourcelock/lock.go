// Package resourcelock is a client-go resourcelock.Interface backed by fencekeeper: the elector of
// k8s.io/client-go/tools/leaderelection (RunOrDie, and controller-runtime's manager through
// LeaderElectionResourceLockInterface) elects through a fencekeeper lease, with no Kubernetes API server,
// and the leader gets the lease's fencing token.
//
// The mapping (README.md says more):
//
//   - Get is a Describe of the resource: the holder's LeaderElectionRecord as it published it with its
//     acquisition (AcquireOptions.Value), this process's latest record while it holds the lease, and a
//     record with no HolderIdentity while nobody holds the resource exclusively.
//   - Update (and Create) with this lock's identity either confirms the term it holds (client-go's
//     renewal: the SDK renews the lease itself, every third of its TTL, so this only looks at the lease,
//     by the clock), or acquires the resource without waiting, publishing the record: held by another, it
//     fails with a Conflict. Update with an empty HolderIdentity (client-go's ReleaseOnCancel) releases.
//   - A lease lost while client-go leads on it ends that term for good: Update fails from the loss until
//     client-go stops leading (its "stopped leading" event), so client-go's renewal fails and it ends the
//     leadership; the lock never acquires again underneath a term client-go still runs.
//
// The SDK's loss signal reaches the guarded code through Lock.Context: the context given to
// OnStartedLeading, ended too the moment the lease can no longer be assumed held, carrying the token
// (TokenFrom).
package resourcelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The event client-go's LeaderElector records through RecordEvent when its renewal loop ends
// (leaderelection.go, renew): the lock learns from it that client-go's leadership is over.
const eventStoppedLeading = "stopped leading"

// ErrNotLeading: this lock holds no lease (it never acquired one, or client-go stopped leading on it).
var ErrNotLeading = errors.New("resourcelock: this process does not lead")

// Lock is a resourcelock.Interface on one fencekeeper resource. Safe for concurrent use; one
// LeaderElector uses it at a time.
type Lock struct {
	client   *fencekeeper.Client
	resource string
	config   rl.ResourceLockConfig
	ttl      time.Duration

	mu sync.Mutex
	// term is the latest lease this lock acquired, nil before the first.
	term *term
	// leading: client-go leads on term, from its acquisition until client-go's "stopped leading".
	leading bool
}

type term struct {
	lease  *fencekeeper.Lease
	record rl.LeaderElectionRecord
	// ended: client-go stopped leading on it (its lease may still be held, see RecordEvent).
	ended bool
}

// Option configures a Lock.
type Option func(*Lock)

// WithTTL sets the lease's TTL (etcd grants whole seconds, at least 2 s). Without it, the TTL is the
// record's LeaseDurationSeconds, that is client-go's LeaderElectionConfig.LeaseDuration.
func WithTTL(ttl time.Duration) Option { return func(l *Lock) { l.ttl = ttl } }

// New is a lock on resource through client, for the candidate config.Identity (required by client-go;
// it is also the holder label fencekeeper shows). config.EventRecorder, if set, is told client-go's
// events as it is by client-go's own locks, about a Lease object named resource.
func New(client *fencekeeper.Client, resource string, config rl.ResourceLockConfig, opts ...Option) *Lock {
	l := &Lock{client: client, resource: resource, config: config}
	for _, o := range opts {
		o(l)
	}
	return l
}

var _ rl.Interface = (*Lock)(nil)

// Get returns the current LeaderElectionRecord of the resource, from a Describe. Never NotFound: a
// resource nobody holds is a record without a HolderIdentity, which client-go takes as free to acquire.
// The raw bytes (what client-go compares to notice a change) name the holder's generation, so every new
// term is a change, even of the same identity.
func (l *Lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	d, err := l.client.Describe(ctx, l.resource)
	if err != nil {
		return nil, nil, err
	}
	if d.Token == nil {
		// Free, in a lock-delay, or held by shared holders: nobody leads.
		record := rl.LeaderElectionRecord{LeaderTransitions: int(d.LastIssued)}
		return &record, []byte("free:" + strconv.FormatInt(d.LastIssued, 10)), nil
	}
	generation := strconv.FormatInt(d.Token.Generation, 10) + ":"
	l.mu.Lock()
	t := l.term
	var mine *rl.LeaderElectionRecord
	if t != nil && !t.ended && t.lease.Token().Generation == d.Token.Generation {
		record := t.record
		mine = &record
	}
	l.mu.Unlock()
	if mine != nil && t.lease.Held() {
		raw, _ := json.Marshal(mine)
		return mine, append([]byte(generation), raw...), nil
	}
	var record rl.LeaderElectionRecord
	if json.Unmarshal(d.Value, &record) != nil || record.HolderIdentity == "" {
		// Not acquired through this package (or by hand): the holder label names it.
		record = rl.LeaderElectionRecord{HolderIdentity: d.Holder, LeaseDurationSeconds: int(d.TTL / time.Second)}
	}
	return &record, append([]byte(generation), d.Value...), nil
}

// Create is Update: Get never answers NotFound, so client-go calls it only if that changes.
func (l *Lock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return l.Update(ctx, ler)
}

// Update is client-go's write of the record: with this lock's identity, a renewal of the term it holds
// or an acquisition without waiting; with none, a release.
func (l *Lock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		// client-go's release (ReleaseOnCancel): give the lease up, so that the next candidate is elected at once.
		l.mu.Lock()
		t := l.term
		l.mu.Unlock()
		if t != nil {
			t.lease.Release(ctx)
		}
		return nil
	}
	if ler.HolderIdentity != l.Identity() {
		return fmt.Errorf("resourcelock: a record of %q cannot be written by %q", ler.HolderIdentity, l.Identity())
	}
	l.mu.Lock()
	t, leading := l.term, l.leading
	if t != nil && !t.ended {
		if err := t.lease.Check(); err == nil {
			// client-go's renewal: the SDK renews the lease on its own stream; the lease is held by the
			// clock right now, so the term goes on. Followers keep the record published at the acquisition.
			t.record = ler
			l.mu.Unlock()
			return nil
		} else if leading {
			// Lost while client-go leads on it: that term is over. Refuse until client-go stops leading
			// (it does after RenewDeadline of refused renewals), rather than acquire again underneath it.
			l.mu.Unlock()
			return l.conflict(err)
		}
	}
	l.mu.Unlock()
	if t != nil && t.lease.Held() {
		// client-go stopped leading on it and the lease is kept until its release (RecordEvent).
		return l.conflict(fmt.Errorf("the lease of the term that ended (generation %d) is not given back yet", t.lease.Token().Generation))
	}
	value, err := json.Marshal(ler)
	if err != nil {
		return err
	}
	ttl := l.ttl
	if ttl == 0 {
		ttl = time.Duration(ler.LeaseDurationSeconds) * time.Second
	}
	// A lease of its own: its fate is this election's alone, and a release behind its back is learned
	// at its next renewal. Without waiting: client-go's loop is the wait.
	lease, err := l.client.Acquire(ctx, l.resource, fencekeeper.AcquireOptions{TTL: ttl, Holder: l.Identity(), Value: value, OwnLease: true})
	if err != nil {
		var held *fencekeeper.ResourceHeldError
		if errors.As(err, &held) {
			return l.conflict(err)
		}
		return err
	}
	l.mu.Lock()
	l.term = &term{lease: lease, record: ler}
	l.leading = true
	l.mu.Unlock()
	return nil
}

func (l *Lock) conflict(err error) error {
	return apierrors.NewConflict(schema.GroupResource{Group: "fencekeeper", Resource: "resources"}, l.resource, err)
}

// RecordEvent tells config.EventRecorder, if any, and follows client-go's leadership: "stopped leading"
// ends the term. If its lease is still held then (client-go stopped without ReleaseOnCancel), it is kept
// for one TTL more and then released: client-go's followers would have waited that long for it to
// expire, and meanwhile the guarded code that outlived the term can end (its writes are fenced either way).
func (l *Lock) RecordEvent(s string) {
	if r := l.config.EventRecorder; r != nil {
		subject := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.resource}}
		r.Eventf(subject, corev1.EventTypeNormal, "LeaderElection", "%v %v", l.Identity(), s)
	}
	if s != eventStoppedLeading {
		return
	}
	l.mu.Lock()
	t := l.term
	l.leading = false
	if t != nil {
		t.ended = true
	}
	l.mu.Unlock()
	if t != nil && t.lease.Held() {
		time.AfterFunc(t.lease.TTL(), func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			t.lease.Release(ctx)
		})
	}
}

// Identity is config.Identity.
func (l *Lock) Identity() string { return l.config.Identity }

// Describe names the lock in client-go's logs.
func (l *Lock) Describe() string { return "fencekeeper:" + l.resource }

// Lease is the lease of the current term (nil before the first acquisition): its token, Put, Delete and
// Txn under it, its Done and Context.
func (l *Lock) Lease() *fencekeeper.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return nil
	}
	return l.term.lease
}

// Token is the fencing token of the term this process leads on, or an error: ErrNotLeading, or the
// *fencekeeper.LeaseLostError once the lease is lost (it looks at the clock first).
func (l *Lock) Token() (fencekeeper.Token, error) {
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil || t.ended {
		return fencekeeper.Token{}, ErrNotLeading
	}
	if err := t.lease.Check(); err != nil {
		return fencekeeper.Token{}, err
	}
	return t.lease.Token(), nil
}

type leaseKey struct{}

// Context is ctx (the one client-go gives OnStartedLeading), ended also the moment this term's lease can
// no longer be assumed held, with the *fencekeeper.LeaseLostError as its cause: the SDK's loss signal,
// which comes before anyone else can be elected, where client-go would cancel ctx only after its
// RenewDeadline of refused renewals. When ctx ends, the cause is the loss if the lease is lost by then
// (after a pause of the process both come due at once), else ctx's. Its Done and Err look at the clock
// first, so code that checks it after a pause of the process sees the loss on its first look. TokenFrom
// and LeaseFrom read it. Called when this process does not lead, it is ended already, with ErrNotLeading.
func (l *Lock) Context(ctx context.Context) context.Context {
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil || t.ended {
		ended, cancel := context.WithCancelCause(ctx)
		cancel(ErrNotLeading)
		return ended
	}
	lease := t.lease
	// Cancelled by the two AfterFuncs rather than as ctx's child, so that the loss wins as the cause.
	inner, cancel := context.WithCancelCause(context.WithoutCancel(context.WithValue(ctx, leaseKey{}, lease)))
	c := leadingContext{Context: inner, parent: ctx, lease: lease, cancel: cancel}
	leaseCtx := lease.Context()
	stopLease := context.AfterFunc(leaseCtx, func() { cancel(context.Cause(leaseCtx)) })
	stopParent := context.AfterFunc(ctx, c.look)
	context.AfterFunc(inner, func() {
		stopLease()
		stopParent()
	})
	c.look()
	return c
}

// leadingContext looks at the lease (by the clock) and at ctx before it answers Done or Err.
type leadingContext struct {
	context.Context
	parent context.Context
	lease  *fencekeeper.Lease
	cancel context.CancelCauseFunc
}

func (c leadingContext) look() {
	if err := c.lease.Err(); err != nil {
		c.cancel(err)
	} else if c.parent.Err() != nil {
		c.cancel(context.Cause(c.parent))
	}
}

func (c leadingContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c leadingContext) Done() <-chan struct{} {
	c.look()
	return c.Context.Done()
}

func (c leadingContext) Err() error {
	c.look()
	return c.Context.Err()
}

// LeaseFrom is the lease of a context made by Lock.Context, or nil.
func LeaseFrom(ctx context.Context) *fencekeeper.Lease {
	lease, _ := ctx.Value(leaseKey{}).(*fencekeeper.Lease)
	return lease
}

// TokenFrom is the fencing token of a context made by Lock.Context: the leader's, to send with every
// write the leader makes (the fenced store, a fenced endpoint, a table of your own). False for another context.
func TokenFrom(ctx context.Context) (fencekeeper.Token, bool) {
	lease := LeaseFrom(ctx)
	if lease == nil {
		return fencekeeper.Token{}, false
	}
	return lease.Token(), true
}
