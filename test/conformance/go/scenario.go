package main

import (
	"context"
	"fmt"
	"io"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	ttl            = 2 * time.Second
	keepAliveEvery = 600 * time.Millisecond
	keepAliveFor   = 7 * time.Second
)

// step prints a step that passed.
func step(format string, args ...any) { fmt.Printf("ok "+format+"\n", args...) }

// runScenario runs the scenario of SCENARIO.md against server on resource, with clients of its own,
// each with credentials.
func runScenario(ctx context.Context, server string, credentials auth, resource string) error {
	a, err := dial(server, credentials)
	if err != nil {
		return err
	}
	defer a.conn.Close()
	b, err := dial(server, credentials)
	if err != nil {
		return err
	}
	defer b.conn.Close()
	observer, err := dial(server, credentials)
	if err != nil {
		return err
	}
	defer observer.conn.Close()

	// 1. Observe.
	observeCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	stream, err := observer.lease.Observe(observeCtx, &fencekeeperv1.ObserveRequest{Resource: resource})
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("observe: first message: %w", err)
	}
	if first.GetHeld() {
		return fmt.Errorf("observe: expected %s not held at first, got held by %s", resource, first.GetHolder())
	}
	observed := make(chan *fencekeeperv1.ObserveResponse, 16)
	go func() {
		defer close(observed)
		for {
			msg, err := stream.Recv()
			if err != nil {
				return
			}
			observed <- msg
		}
	}()
	step("observe: %s not held", resource)

	// 2. Acquire.
	acquired, err := a.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource, Ttl: durationpb.New(ttl), Holder: "go-a"})
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	tokenA := acquired.GetToken()
	if tokenA.GetResource() != resource || tokenA.GetGeneration() <= 0 || acquired.GetTtl().AsDuration() != ttl {
		return fmt.Errorf("acquire: expected a token for %s with a positive generation and ttl 2s, got %v ttl %v", resource, tokenA, acquired.GetTtl().AsDuration())
	}
	step("acquire: generation %d, lease %d", tokenA.GetGeneration(), tokenA.GetLeaseId())

	// 3. Put.
	valueA := "hello from go-a"
	put, err := a.store.Put(ctx, &fencekeeperv1.PutRequest{
		Resource: resource, Key: "greeting", Value: []byte(valueA),
		Mutation: &fencekeeperv1.Mutation{Token: tokenA, Mode: fencekeeperv1.FenceMode_FENCE_MODE_ORDER, IdempotencyKey: resource + "-put-a"},
	})
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if put.GetCommit().GetFence() != tokenA.GetGeneration() {
		return fmt.Errorf("put: expected fence %d, got %d", tokenA.GetGeneration(), put.GetCommit().GetFence())
	}
	step("put: fence %d", put.GetCommit().GetFence())

	// 4. Get.
	got, err := a.store.Get(ctx, &fencekeeperv1.GetRequest{Resource: resource, Key: "greeting"})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if !got.GetFound() || string(got.GetValue()) != valueA || got.GetFence() != tokenA.GetGeneration() {
		return fmt.Errorf("get: expected %q at fence %d, got found=%v %q at fence %d", valueA, tokenA.GetGeneration(), got.GetFound(), got.GetValue(), got.GetFence())
	}
	step("get: %q", got.GetValue())

	// 5. KeepAlive.
	if err := keepAlive(ctx, a, tokenA); err != nil {
		return fmt.Errorf("keepalive: %w", err)
	}
	described, err := a.lease.Describe(ctx, &fencekeeperv1.DescribeRequest{Resource: resource})
	if err != nil {
		return fmt.Errorf("keepalive: describe: %w", err)
	}
	if !described.GetHeld() || described.GetToken().GetGeneration() != tokenA.GetGeneration() {
		return fmt.Errorf("keepalive: expected %s still held by generation %d after %v, got held=%v generation %d", resource, tokenA.GetGeneration(), keepAliveFor, described.GetHeld(), described.GetToken().GetGeneration())
	}
	step("keepalive: still held after %v (TTL %v)", keepAliveFor, ttl)

	// 6. Release.
	if _, err := a.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: tokenA}); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	step("release")

	// 7. Handover.
	acquiredB, err := b.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource, Ttl: durationpb.New(ttl), Holder: "go-b"})
	if err != nil {
		return fmt.Errorf("handover: acquire: %w", err)
	}
	tokenB := acquiredB.GetToken()
	if tokenB.GetGeneration() <= tokenA.GetGeneration() {
		return fmt.Errorf("handover: expected a generation greater than %d, got %d", tokenA.GetGeneration(), tokenB.GetGeneration())
	}
	if err := awaitHandover(observed, tokenA.GetGeneration(), tokenB.GetGeneration()); err != nil {
		return fmt.Errorf("handover: observe: %w", err)
	}
	step("handover: generation %d, observed", tokenB.GetGeneration())

	// 8. Fencing.
	valueB := "hello from go-b"
	if _, err := b.store.Put(ctx, &fencekeeperv1.PutRequest{Resource: resource, Key: "greeting", Value: []byte(valueB), Mutation: &fencekeeperv1.Mutation{Token: tokenB}}); err != nil {
		return fmt.Errorf("fencing: put with the new token: %w", err)
	}
	_, err = a.store.Put(ctx, &fencekeeperv1.PutRequest{Resource: resource, Key: "greeting", Value: []byte("stale"), Mutation: &fencekeeperv1.Mutation{Token: tokenA}})
	if err := expectFailure(err, "FAILED_PRECONDITION", "STALE_TOKEN"); err != nil {
		return fmt.Errorf("fencing: put with the old token: %w", err)
	}
	got, err = a.store.Get(ctx, &fencekeeperv1.GetRequest{Resource: resource, Key: "greeting"})
	if err != nil || string(got.GetValue()) != valueB {
		return fmt.Errorf("fencing: expected %q after the refused put, got %q (%v)", valueB, got.GetValue(), err)
	}
	step("fencing: old token refused with STALE_TOKEN")

	// 9. Bad input.
	badInputs := []struct {
		name, code, reason string
		call               func() error
	}{
		{"acquire with an empty resource", "INVALID_ARGUMENT", "", func() error {
			_, err := a.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: "", Ttl: durationpb.New(ttl)})
			return err
		}},
		{"acquire with ttl 1s", "INVALID_ARGUMENT", "", func() error {
			_, err := a.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource + "-short", Ttl: durationpb.New(time.Second)})
			return err
		}},
		{"put without a token", "INVALID_ARGUMENT", "", func() error {
			_, err := a.store.Put(ctx, &fencekeeperv1.PutRequest{Resource: resource, Key: "greeting", Value: []byte("x")})
			return err
		}},
		{"renew of an unknown lease", "NOT_FOUND", "LEASE_NOT_FOUND", func() error {
			_, err := a.lease.Renew(ctx, &fencekeeperv1.RenewRequest{LeaseId: 0x7fffffff00000001})
			return err
		}},
		{"acquire of a held resource without waiting", "ABORTED", "RESOURCE_HELD", func() error {
			_, err := a.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: resource, Ttl: durationpb.New(ttl), Holder: "go-c"})
			return err
		}},
	}
	for _, bad := range badInputs {
		if err := expectFailure(bad.call(), bad.code, bad.reason); err != nil {
			return fmt.Errorf("bad input: %s: %w", bad.name, err)
		}
		step("bad input: %s: %s", bad.name, bad.code)
	}

	// 10. Clean up.
	if _, err := b.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: tokenB}); err != nil {
		return fmt.Errorf("clean up: release: %w", err)
	}
	step("clean up")
	return nil
}

// keepAlive renews the lease of token over one KeepAlive stream every keepAliveEvery for keepAliveFor,
// and checks every answer.
func keepAlive(ctx context.Context, c *client, token *fencekeeperv1.FencingToken) error {
	stream, err := c.lease.KeepAlive(ctx)
	if err != nil {
		return err
	}
	answers := make(chan error, 1)
	count := 0
	go func() {
		for {
			res, err := stream.Recv()
			if err == io.EOF {
				answers <- nil
				return
			}
			if err != nil {
				answers <- err
				return
			}
			if res.GetLeaseId() != token.GetLeaseId() || res.GetError() != nil || res.GetTtl() == nil {
				answers <- fmt.Errorf("expected a renewal of lease %d, got %v", token.GetLeaseId(), res)
				return
			}
			count++
		}
	}()
	sent := 0
	for deadline := time.Now().Add(keepAliveFor); time.Now().Before(deadline); sent++ {
		if err := stream.Send(&fencekeeperv1.KeepAliveRequest{LeaseId: token.GetLeaseId()}); err != nil {
			return err
		}
		time.Sleep(keepAliveEvery)
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	if err := <-answers; err != nil {
		return err
	}
	if count != sent {
		return fmt.Errorf("sent %d renewals, got %d answers", sent, count)
	}
	return nil
}

// awaitHandover waits until the observer has seen generation a and then generation b hold the
// resource, with increasing revisions.
func awaitHandover(observed <-chan *fencekeeperv1.ObserveResponse, a, b int64) error {
	timeout := time.After(5 * time.Second)
	var seenA bool
	var revision int64
	for {
		select {
		case msg, ok := <-observed:
			if !ok {
				return fmt.Errorf("the stream ended before generation %d was seen", b)
			}
			if msg.GetRevision() <= revision {
				return fmt.Errorf("revision %d after %d", msg.GetRevision(), revision)
			}
			revision = msg.GetRevision()
			switch {
			case msg.GetHeld() && msg.GetToken().GetGeneration() == a:
				seenA = true
			case msg.GetHeld() && msg.GetToken().GetGeneration() == b:
				if !seenA {
					return fmt.Errorf("generation %d seen without generation %d before it", b, a)
				}
				return nil
			}
		case <-timeout:
			return fmt.Errorf("generation %d (after %d) not seen within 5s", b, a)
		}
	}
}
