package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"google.golang.org/grpc"
)

const ttl = 2 * time.Second

// B's lease carries the writes from the handover on: its TTL is not what those steps test, and a loaded
// machine that stalls a process for a couple of seconds must not take it away from under them.
const heldTTL = 10 * time.Second

func step(format string, args ...any) { fmt.Printf("ok "+format+"\n", args...) }

// runScenario runs the scenario of test/conformance/SCENARIO.md through the library, with a client each
// for A, B and the observer. Where the scenario drives the raw stubs (the KeepAlive stream, a Renew of
// an unknown lease), it checks what the library does instead: it keeps the lease alive on its own
// stream, and a lease the server no longer knows ends with LostNotFound.
func runScenario(ctx context.Context, urls []string, creds fencekeeper.Credentials, resource string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var writeCalls atomic.Int64 // the Put, Delete and Batch calls the clients sent
	countWrites := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch method {
		case "/fencekeeper.v1.FencedStoreService/Put", "/fencekeeper.v1.FencedStoreService/Delete", "/fencekeeper.v1.FencedStoreService/Batch":
			writeCalls.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	newClient := func(holder string) (*fencekeeper.Client, error) {
		// Leases of their own: the scenario follows a lease released behind its back, which a session hides.
		return fencekeeper.New(fencekeeper.Options{Servers: urls, Credentials: creds, Holder: holder, OwnLeases: true, DialOptions: []grpc.DialOption{countWrites}})
	}
	a, err := newClient("go-sdk-a")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := newClient("go-sdk-b")
	if err != nil {
		return err
	}
	defer b.Close()
	observer, err := newClient("go-sdk-observer")
	if err != nil {
		return err
	}
	defer observer.Close()

	// 1. Observe.
	observed := make(chan fencekeeper.Ownership, 16)
	first := make(chan error, 1)
	go func() {
		defer close(observed)
		seen := false
		for o, err := range observer.Observe(ctx, resource) {
			switch {
			case err != nil && !seen:
				first <- err
			case err != nil:
			case !seen:
				seen = true
				if o.Held {
					first <- fmt.Errorf("expected %s not held at first, got held by %s", resource, o.Holder)
				} else {
					first <- nil
				}
			default:
				observed <- o
			}
		}
	}()
	if err := <-first; err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	step("observe: %s not held", resource)

	// 2. Acquire.
	leaseA, err := a.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: ttl})
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	tokenA := leaseA.Token()
	if tokenA.Resource != resource || tokenA.Generation <= 0 || leaseA.TTL() != ttl || !leaseA.Held() {
		return fmt.Errorf("acquire: expected a held lease on %s with a positive generation and ttl 2s, got %v ttl %v", resource, tokenA, leaseA.TTL())
	}
	step("acquire: generation %d, lease %d", tokenA.Generation, tokenA.LeaseID)

	// The token verifies offline with the server's keys; altered, it does not.
	keys, err := a.TokenKeys(ctx)
	if err != nil {
		return fmt.Errorf("acquire: token keys: %w", err)
	}
	altered := tokenA
	altered.Generation++
	if err := fencekeeper.VerifyToken(tokenA, keys); err != nil || !errors.Is(fencekeeper.VerifyToken(altered, keys), fencekeeper.ErrBadSignature) {
		return fmt.Errorf("acquire: expected the token to verify and an altered one not to, got %v, %v", err, fencekeeper.VerifyToken(altered, keys))
	}
	step("acquire: the token verifies offline (key %s)", tokenA.KeyID)

	// 3. Put.
	valueA := "hello from go-sdk-a"
	put, err := leaseA.Put(ctx, "greeting", []byte(valueA), fencekeeper.WithFenceMode(fencekeeper.FenceOrder), fencekeeper.WithIdempotencyKey(resource+"-put-a"))
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if put.Fence != tokenA.Generation {
		return fmt.Errorf("put: expected fence %d, got %d", tokenA.Generation, put.Fence)
	}
	step("put: fence %d", put.Fence)

	// 3b. Batch: independent writes in one call, each answered as it would be alone.
	results, err := a.Store().Batch(ctx, []fencekeeper.BatchWrite{
		fencekeeper.BatchPut(tokenA, "batch-1", []byte("one"), fencekeeper.WithIdempotencyKey(resource+"-batch-1")),
		fencekeeper.BatchPut(tokenA, "", []byte("an empty key is refused")),
		fencekeeper.BatchDelete(tokenA, "batch-never-written"),
	})
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	var invalid *fencekeeper.InvalidArgumentError
	if len(results) != 3 || results[0].Err != nil || results[0].Commit.Fence != tokenA.Generation || !errors.As(results[1].Err, &invalid) ||
		results[2].Err != nil || results[2].Commit.Fence != tokenA.Generation {
		return fmt.Errorf("batch: expected a commit, InvalidArgumentError, a commit; got %+v", results)
	}
	again, err := a.Store().Batch(ctx, []fencekeeper.BatchWrite{fencekeeper.BatchPut(tokenA, "batch-1", []byte("one"), fencekeeper.WithIdempotencyKey(resource+"-batch-1"))})
	if err != nil || len(again) != 1 || again[0].Err != nil || !again[0].Commit.Replayed || again[0].Commit.Revision != results[0].Commit.Revision {
		return fmt.Errorf("batch: expected the retry replayed at revision %d, got %+v, %v", results[0].Commit.Revision, again, err)
	}
	step("batch: two commits at fence %d and an InvalidArgumentError of its own; the retry replayed", results[0].Commit.Fence)

	// 4. Get.
	got, err := leaseA.Get(ctx, "greeting")
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if !got.Found || string(got.Value) != valueA || got.Fence != tokenA.Generation {
		return fmt.Errorf("get: expected %q at fence %d, got found=%v %q at fence %d", valueA, tokenA.Generation, got.Found, got.Value, got.Fence)
	}
	step("get: %q", got.Value)

	// 5. KeepAlive: the library's own stream keeps the lease for three and a half TTLs.
	firstConfirmed := leaseA.LastConfirmedAt()
	select {
	case <-leaseA.Done():
		return fmt.Errorf("keepalive: lease lost: %w", leaseA.Err())
	case <-time.After(7 * time.Second):
	}
	if err := leaseA.Check(); err != nil {
		return fmt.Errorf("keepalive: %w", err)
	}
	if !leaseA.LastConfirmedAt().After(firstConfirmed.Add(5 * time.Second)) {
		return fmt.Errorf("keepalive: the last renewal was confirmed at %v, expected renewals until the end of the 7 s", leaseA.LastConfirmedAt())
	}
	described, err := a.Describe(ctx, resource)
	if err != nil {
		return fmt.Errorf("keepalive: describe: %w", err)
	}
	if !described.Held || described.Token.Generation != tokenA.Generation {
		return fmt.Errorf("keepalive: expected %s still held by generation %d, got %+v", resource, tokenA.Generation, described)
	}
	step("keepalive: still held after 7s (TTL %v), valid until %s", ttl, leaseA.ValidUntil().Format(time.RFC3339Nano))

	// 6. Release: idempotent, and the loss signal says why.
	leaseA.Release(ctx)
	leaseA.Release(ctx)
	var lost *fencekeeper.LeaseLostError
	if !errors.As(leaseA.Err(), &lost) || lost.Why != fencekeeper.LostReleased {
		return fmt.Errorf("release: expected LeaseLostError released, got %v", leaseA.Err())
	}
	select {
	case <-leaseA.Done():
	default:
		return errors.New("release: Done is not closed")
	}
	if _, err := leaseA.Put(ctx, "greeting", []byte("after release")); !errors.As(err, &lost) {
		return fmt.Errorf("release: expected a write through the released lease refused by the client, got %v", err)
	}
	step("release")

	// 7. Handover.
	leaseB, err := b.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: heldTTL})
	if err != nil {
		return fmt.Errorf("handover: acquire: %w", err)
	}
	tokenB := leaseB.Token()
	if tokenB.Generation <= tokenA.Generation {
		return fmt.Errorf("handover: expected a generation greater than %d, got %d", tokenA.Generation, tokenB.Generation)
	}
	if err := awaitHandover(observed, tokenA.Generation, tokenB.Generation); err != nil {
		return fmt.Errorf("handover: observe: %w", err)
	}
	step("handover: generation %d, observed", tokenB.Generation)

	// 8. Fencing.
	valueB := "hello from go-sdk-b"
	if _, err := leaseB.Put(ctx, "greeting", []byte(valueB)); err != nil {
		return fmt.Errorf("fencing: put with the new token: %w", err)
	}
	_, err = a.Store().Put(ctx, tokenA, "greeting", []byte("stale"))
	var stale *fencekeeper.StaleTokenError
	var se *fencekeeper.StatusError
	if !errors.As(err, &stale) || !errors.As(err, &se) || se.Code.String() != "FailedPrecondition" || stale.Reason != "STALE_TOKEN" || stale.Fence != tokenB.Generation || stale.Generation != tokenA.Generation {
		return fmt.Errorf("fencing: expected StaleTokenError (FAILED_PRECONDITION STALE_TOKEN, fence %d), got %v", tokenB.Generation, err)
	}
	got, err = a.Store().Get(ctx, resource, "greeting")
	if err != nil || string(got.Value) != valueB {
		return fmt.Errorf("fencing: expected %q after the refused put, got %q (%v)", valueB, got.Value, err)
	}
	step("fencing: old token refused with STALE_TOKEN, fence %d", stale.Fence)

	// 8b. Coalescing: 64 concurrent writes under B's token, and among them 4 under A's stale one, through
	// one client. The library carries them in fewer calls than writes; each keeps the answer it would get alone.
	type answer struct {
		key    string
		stale  bool
		commit fencekeeper.Commit
		err    error
	}
	answers := make([]answer, 68)
	sentBefore := writeCalls.Load()
	var wg sync.WaitGroup
	for i := range answers {
		a := &answers[i]
		a.stale = i%17 == 16
		if a.stale {
			a.key = fmt.Sprintf("coalesce-stale-%d", i)
			wg.Go(func() { a.commit, a.err = b.Store().Put(ctx, tokenA, a.key, []byte("stale")) })
		} else {
			a.key = fmt.Sprintf("coalesce-%d", i)
			wg.Go(func() { a.commit, a.err = leaseB.Put(ctx, a.key, []byte(a.key)) })
		}
	}
	wg.Wait()
	coalescedIn := writeCalls.Load() - sentBefore
	want := map[string]string{}
	for _, a := range answers {
		if a.stale {
			if !errors.As(a.err, &stale) || stale.Fence != tokenB.Generation || stale.Generation != tokenA.Generation {
				return fmt.Errorf("coalesce: expected the stale write %s refused with StaleTokenError (fence %d), got %v (%T)", a.key, tokenB.Generation, a.err, a.err)
			}
			continue
		}
		if a.err != nil || a.commit.Fence != tokenB.Generation || a.commit.Revision <= 0 {
			return fmt.Errorf("coalesce: expected %s committed at fence %d, got %+v, %v", a.key, tokenB.Generation, a.commit, a.err)
		}
		want[a.key] = a.key
	}
	written := map[string]string{}
	for e, err := range b.Store().List(ctx, resource, "coalesce-") {
		if err != nil {
			return fmt.Errorf("coalesce: list: %w", err)
		}
		written[e.Key] = string(e.Value)
	}
	if !maps.Equal(written, want) {
		return fmt.Errorf("coalesce: expected the 64 writes applied and the 4 stale ones not, got %d keys: %v", len(written), written)
	}
	// (Lost by its deadline on a machine too loaded to renew in time, it is not what this step checks.)
	if errors.As(leaseB.Err(), &lost) && lost.Why == fencekeeper.LostFenced {
		return fmt.Errorf("coalesce: the stale writes of another token ended B's lease: %w", leaseB.Err())
	}
	step("coalesce: 64 concurrent writes, each answered on its own, in %d calls", coalescedIn)
	step("coalesce: 4 stale writes among them refused alone: STALE_TOKEN")

	// Several resources, all or nothing (AcquireAll), taken in the order of their names.
	if err := multiLock(ctx, a, resource); err != nil {
		return fmt.Errorf("multi-lock: %w", err)
	}
	step("multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free")

	// 9. Bad input.
	badInputs := []struct {
		name  string
		check func(error) bool
		call  func() error
	}{
		{"acquire with an empty resource", is[*fencekeeper.InvalidArgumentError], func() error {
			_, err := a.Acquire(ctx, "", fencekeeper.AcquireOptions{TTL: ttl})
			return err
		}},
		{"acquire with ttl 1s", is[*fencekeeper.InvalidArgumentError], func() error {
			_, err := a.Acquire(ctx, resource+"-short", fencekeeper.AcquireOptions{TTL: time.Second})
			return err
		}},
		{"acquire of a held resource without waiting", func(err error) bool {
			var held *fencekeeper.ResourceHeldError
			return errors.As(err, &held) && held.Code.String() == "Aborted" && held.Reason == "RESOURCE_HELD" &&
				held.Holder == "go-sdk-b" && held.HolderToken != nil && held.HolderToken.Generation == tokenB.Generation
		}, func() error {
			_, err := a.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: ttl})
			return err
		}},
		{"waiting at most 300 ms for a held resource", is[*fencekeeper.TimeoutError], func() error {
			_, err := a.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: ttl, Wait: true, WaitTimeout: 300 * time.Millisecond})
			return err
		}},
	}
	for _, bad := range badInputs {
		if err := bad.call(); !bad.check(err) {
			return fmt.Errorf("bad input: %s: got %v (%T)", bad.name, err, err)
		}
		step("bad input: %s", bad.name)
	}
	// Waiting in line: granted at B's release, 1.5 s later, and confirmed by a renewal then, so that its
	// deadline counts from that renewal, not from the Acquire sent a second before.
	leaseFirst, err := b.Acquire(ctx, resource+"-line", fencekeeper.AcquireOptions{TTL: ttl})
	if err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	granted := make(chan error, 1)
	var leaseW *fencekeeper.Lease
	go func() {
		var err error
		leaseW, err = a.Acquire(ctx, resource+"-line", fencekeeper.AcquireOptions{TTL: ttl, Wait: true, WaitTimeout: 10 * time.Second})
		granted <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	leaseFirst.Release(ctx)
	if err := <-granted; err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	// Counted from the Acquire, 1.5 s before the grant, 0.38 s would be left; from the renewal, 1.88 s less its round trip.
	if left := time.Until(leaseW.ValidUntil()); left < ttl-fencekeeper.DefaultDriftMargin(ttl)-time.Second {
		return fmt.Errorf("wait: a lease granted after a wait in line is valid for %v only: its deadline counts from the Acquire's send", left)
	}
	leaseW.Release(ctx)
	step("wait: granted in line at the holder's release, valid from its confirming renewal")

	// Cancelling: the context of a waiting acquire ends the wait. Once granted, the lease outlives the
	// Acquire's context, unless it was tied to one (AcquireOptions.LeaseContext): that one's end ends it,
	// and it is released on the server.
	waiting, stopWaiting := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, stopWaiting)
	if _, err := a.Acquire(waiting, resource, fencekeeper.AcquireOptions{TTL: ttl, Wait: true}); !is[*fencekeeper.CanceledError](err) {
		return fmt.Errorf("cancel: expected CanceledError from a cancelled wait, got %v (%T)", err, err)
	}
	holding, stopHolding := context.WithCancel(ctx)
	defer stopHolding()
	leaseD, err := a.Acquire(ctx, resource+"-canceled", fencekeeper.AcquireOptions{TTL: ttl, LeaseContext: holding})
	if err != nil {
		return fmt.Errorf("cancel: acquire: %w", err)
	}
	stopHolding()
	select {
	case <-leaseD.Context().Done():
	case <-time.After(ttl):
		return errors.New("cancel: the lease's context was not cancelled with its LeaseContext")
	}
	if !errors.As(context.Cause(leaseD.Context()), &lost) || lost.Why != fencekeeper.LostCanceled {
		return fmt.Errorf("cancel: expected the lease's context cancelled with LeaseLostError canceled, got %v", context.Cause(leaseD.Context()))
	}
	leaseD.Release(ctx) // waits for the release on the server
	if d, err := a.Describe(ctx, resource+"-canceled"); err != nil || d.Held {
		return fmt.Errorf("cancel: expected the cancelled lease released on the server, got held=%v (%v)", d.Held, err)
	}
	step("cancel: a cancelled wait fails CanceledError; the end of a LeaseContext releases the lease")

	// A lease the server no longer knows (released with its token behind the holder's back): its next
	// renewal is answered NOT_FOUND, which ends it.
	leaseC, err := a.Acquire(ctx, resource+"-gone", fencekeeper.AcquireOptions{TTL: ttl})
	if err != nil {
		return fmt.Errorf("not found: acquire: %w", err)
	}
	if err := releaseBehindBack(ctx, urls, creds, leaseC.Token()); err != nil {
		return fmt.Errorf("not found: %w", err)
	}
	select {
	case <-leaseC.Done():
	case <-time.After(ttl):
		return errors.New("not found: the lease was not lost within a TTL")
	}
	var notFound *fencekeeper.LeaseNotFoundError
	if !errors.As(leaseC.Err(), &lost) || lost.Why != fencekeeper.LostNotFound || !errors.As(leaseC.Err(), &notFound) {
		return fmt.Errorf("not found: expected LeaseLostError not-found wrapping LeaseNotFoundError, got %v", leaseC.Err())
	}
	step("not found: a renewal answered LEASE_NOT_FOUND ends the lease")

	// Campaign takes Acquire's options: NoWait fails fast while B holds the resource, a campaign is
	// exclusive, and on a free resource it is elected at once with its value published.
	if _, err := a.Campaign(ctx, resource, []byte("a"), fencekeeper.AcquireOptions{TTL: ttl, NoWait: true}); !is[*fencekeeper.ResourceHeldError](err) {
		return fmt.Errorf("campaign: NoWait while B holds %s: expected ResourceHeldError, got %v", resource, err)
	}
	elected := resource + "-campaign"
	if _, err := a.Campaign(ctx, elected, []byte("a"), fencekeeper.AcquireOptions{TTL: ttl, Shared: true}); !is[*fencekeeper.InvalidArgumentError](err) {
		return fmt.Errorf("campaign: Shared: expected InvalidArgumentError, got %v", err)
	}
	leadership, err := a.Campaign(ctx, elected, []byte("a"), fencekeeper.AcquireOptions{TTL: ttl, NoWait: true})
	if err != nil {
		return fmt.Errorf("campaign: NoWait on a free resource: %v", err)
	}
	if leader, err := a.Leader(ctx, elected); err != nil || leader == nil || string(leader.Value) != "a" || leader.Token.Generation != leadership.Token().Generation {
		return fmt.Errorf("campaign: expected the leader with value \"a\" and generation %d, got %+v (%v)", leadership.Token().Generation, leader, err)
	}
	// On a lease of its own: an acquisition beside it (on the client's session, sessions being the default)
	// is on another.
	beside, err := a.Acquire(ctx, elected+"-beside", fencekeeper.AcquireOptions{TTL: ttl})
	if err != nil {
		return fmt.Errorf("campaign: an acquisition beside it: %v", err)
	}
	if beside.Token().LeaseID == leadership.Token().LeaseID {
		return fmt.Errorf("campaign: on lease %d, the one an acquisition beside it is on: expected a lease of its own", beside.Token().LeaseID)
	}
	beside.Release(ctx)
	leadership.Resign(ctx)
	step("campaign: Acquire's options, on a lease of its own; NoWait refused RESOURCE_HELD while another holds, Shared refused, elected at once when free")

	// 10. Clean up, through WithLease: it runs, then releases.
	leaseB.Release(ctx)
	ran := false
	err = fencekeeper.WithLease(ctx, b, resource, fencekeeper.AcquireOptions{TTL: ttl}, func(ctx context.Context, l *fencekeeper.Lease) error {
		ran = l.Token().Generation > tokenB.Generation && ctx.Err() == nil
		return nil
	})
	if err != nil || !ran {
		return fmt.Errorf("clean up: WithLease: ran=%v %v", ran, err)
	}
	if d, err := b.Describe(ctx, resource); err != nil || d.Held {
		return fmt.Errorf("clean up: expected %s released after WithLease, got held=%v (%v)", resource, d.Held, err)
	}
	step("clean up")
	return nil
}

func is[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// releaseBehindBack releases token from a client of its own, as an operator would.
func releaseBehindBack(ctx context.Context, urls []string, creds fencekeeper.Credentials, token fencekeeper.Token) error {
	other, err := fencekeeper.New(fencekeeper.Options{Servers: urls, Credentials: creds})
	if err != nil {
		return err
	}
	defer other.Close()
	return other.ReleaseToken(ctx, token)
}

// awaitHandover waits until the observer has seen generation a and then generation b hold the
// resource, with increasing revisions.
func awaitHandover(observed <-chan fencekeeper.Ownership, a, b int64) error {
	timeout := time.After(30 * time.Second)
	var seenA bool
	var revision int64
	for {
		select {
		case o, ok := <-observed:
			if !ok {
				return fmt.Errorf("the stream ended before generation %d was seen", b)
			}
			if o.Revision <= revision {
				return fmt.Errorf("revision %d after %d", o.Revision, revision)
			}
			revision = o.Revision
			switch {
			case o.Held && o.Token.Generation == a:
				seenA = true
			case o.Held && o.Token.Generation == b:
				if !seenA {
					return fmt.Errorf("generation %d seen without generation %d before it", b, a)
				}
				return nil
			}
		case <-timeout:
			return fmt.Errorf("generation %d (after %d) not seen within 30s", b, a)
		}
	}
}

// multiLock takes three resources at once while one of them is held (refused, nothing left held, the
// one after the held one in name order never tried), then once it is free (three leases, in the order
// asked).
func multiLock(ctx context.Context, c *fencekeeper.Client, resource string) error {
	names := []string{resource + "-m3", resource + "-m2", resource + "-m1"}
	held, err := c.Acquire(ctx, names[1], fencekeeper.AcquireOptions{TTL: ttl, OwnLease: true})
	if err != nil {
		return err
	}
	var refused *fencekeeper.ResourceHeldError
	if _, err := c.AcquireAll(ctx, names, fencekeeper.AcquireOptions{TTL: ttl}); !errors.As(err, &refused) {
		return fmt.Errorf("expected *ResourceHeldError while %s is held, got %v (%T)", names[1], err, err)
	}
	for _, n := range []string{names[0], names[2]} {
		d, err := c.Describe(ctx, n)
		if err != nil {
			return err
		}
		if d.Held {
			return fmt.Errorf("%s is held after a refused AcquireAll", n)
		}
		if n == names[0] && d.LastIssued != 0 {
			return fmt.Errorf("%s, after the held one in name order, was acquired (generation %d)", n, d.LastIssued)
		}
	}
	held.Release(ctx)
	leases, err := c.AcquireAll(ctx, names, fencekeeper.AcquireOptions{TTL: ttl, Wait: true, WaitTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	for i, l := range leases {
		if l.Token().Resource != names[i] {
			return fmt.Errorf("lease %d is of %s, expected %s", i, l.Token().Resource, names[i])
		}
		l.Release(ctx)
	}
	return nil
}
