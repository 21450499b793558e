package fencekeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeStore is a FencedStoreService that holds every Put until gate is closed, refuses keys starting
// with "stale" STALE_TOKEN, and counts the calls of each method. Without batch it has no Batch, as a
// server older than it.
type fakeStore struct {
	fencekeeperv1.UnimplementedFencedStoreServiceServer
	gate  chan struct{}
	batch bool

	mu      sync.Mutex
	calls   map[string]int
	batched []int // the number of writes of each Batch
}

func (f *fakeStore) count(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
}

func (f *fakeStore) answer(key string) (*fencekeeperv1.Commit, *status.Status) {
	if strings.HasPrefix(key, "stale") {
		st, _ := status.New(codes.FailedPrecondition, "stale token").WithDetails(&errdetails.ErrorInfo{
			Reason: "STALE_TOKEN", Domain: "fencekeeper", Metadata: map[string]string{"resource": "r", "fence": "9", "generation": "3"}})
		return nil, st
	}
	return &fencekeeperv1.Commit{Revision: 1, Fence: 9}, nil
}

func (f *fakeStore) Put(ctx context.Context, req *fencekeeperv1.PutRequest) (*fencekeeperv1.PutResponse, error) {
	f.count("Put")
	select {
	case <-f.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	commit, st := f.answer(req.GetKey())
	if st != nil {
		return nil, st.Err()
	}
	return &fencekeeperv1.PutResponse{Commit: commit}, nil
}

func (f *fakeStore) Batch(_ context.Context, req *fencekeeperv1.BatchRequest) (*fencekeeperv1.BatchResponse, error) {
	if !f.batch {
		return nil, status.Error(codes.Unimplemented, "unknown method Batch")
	}
	f.count("Batch")
	f.mu.Lock()
	f.batched = append(f.batched, len(req.GetWrites()))
	f.mu.Unlock()
	res := &fencekeeperv1.BatchResponse{}
	for _, w := range req.GetWrites() {
		commit, st := f.answer(w.GetPut().GetKey())
		if st != nil {
			res.Results = append(res.Results, &fencekeeperv1.BatchResult{Result: &fencekeeperv1.BatchResult_Error{Error: st.Proto()}})
		} else {
			res.Results = append(res.Results, &fencekeeperv1.BatchResult{Result: &fencekeeperv1.BatchResult_Commit{Commit: commit}})
		}
	}
	return res, nil
}

func startFakeStore(t *testing.T, batch bool) (*fakeStore, *Client) {
	t.Helper()
	f := &fakeStore{gate: make(chan struct{}), batch: batch, calls: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fencekeeperv1.RegisterFencedStoreServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	c, err := New(Options{Servers: []string{"http://" + lis.Addr().String()}, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.servers.close() })
	return f, c
}

// queued waits until n writes wait in the client's queue.
func queued(t *testing.T, c *Client, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.writes.mu.Lock()
		got := len(c.writes.queue)
		c.writes.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("expected %d writes queued, got %d", n, got)
		}
	}
}

type written struct {
	commit Commit
	err    error
}

// The first two writes go out at once as plain Puts; those made while both are in flight wait and go
// together in one Batch once a call is free, each with its own answer; one whose context ends while it
// waits leaves the queue with its context's error alone.
func TestConcurrentWritesAreCoalescedEachWithItsOwnAnswer(t *testing.T) {
	f, c := startFakeStore(t, true)
	token := Token{Resource: "r", Generation: 9}
	out := make([]written, 12)
	var wg sync.WaitGroup
	put := func(i int, ctx context.Context, key string) {
		wg.Go(func() { out[i].commit, out[i].err = c.Store().Put(ctx, token, key, []byte("v")) })
	}
	put(0, context.Background(), "alone-0")
	put(1, context.Background(), "alone-1")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		n := f.calls["Put"]
		f.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first two writes were not sent at once")
		}
	}
	canceled, cancel := context.WithCancel(context.Background())
	for i := 2; i < 12; i++ {
		key := fmt.Sprintf("k-%d", i)
		ctx := context.Background()
		switch i {
		case 5:
			key = "stale-5"
		case 7:
			ctx = canceled
		}
		put(i, ctx, key)
		queued(t, c, i-1)
	}
	cancel()
	queued(t, c, 9)
	close(f.gate)
	wg.Wait()

	if f.calls["Put"] != 2 || f.calls["Batch"] != 1 || f.batched[0] != 9 {
		t.Fatalf("expected 2 Puts and one Batch of 9 writes, got %v, batches %v", f.calls, f.batched)
	}
	for i, w := range out {
		var stale *StaleTokenError
		var canceledErr *CanceledError
		switch i {
		case 5:
			if !errors.As(w.err, &stale) || stale.Fence != 9 || stale.Generation != 3 || status.Code(w.err) != codes.FailedPrecondition {
				t.Errorf("write %d: expected StaleTokenError fence 9, got %v (%T)", i, w.err, w.err)
			}
		case 7:
			if !errors.As(w.err, &canceledErr) || !errors.Is(w.err, context.Canceled) {
				t.Errorf("write %d: expected CanceledError wrapping context.Canceled, got %v (%T)", i, w.err, w.err)
			}
		default:
			if w.err != nil || w.commit.Fence != 9 {
				t.Errorf("write %d: expected a commit at fence 9, got %+v, %v", i, w.commit, w.err)
			}
		}
	}
}

// A server without Batch answers it UNIMPLEMENTED: the writes it carried go alone, and so does every
// write after.
func TestWritesGoAloneToAServerWithoutBatch(t *testing.T) {
	f, c := startFakeStore(t, false)
	token := Token{Resource: "r", Generation: 9}
	out := make([]written, 6)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			out[i].commit, out[i].err = c.Store().Put(context.Background(), token, fmt.Sprintf("k-%d", i), nil)
		})
		if i >= 2 {
			queued(t, c, i-1)
		}
	}
	close(f.gate)
	wg.Wait()
	for i, w := range out {
		if w.err != nil || w.commit.Fence != 9 {
			t.Fatalf("write %d: expected a commit, got %+v, %v", i, w.commit, w.err)
		}
	}
	if _, err := c.Store().Put(context.Background(), token, "after", nil); err != nil {
		t.Fatal(err)
	}
	if f.calls["Put"] != 7 || !c.writes.alone {
		t.Fatalf("expected 7 Puts, each alone, got %v (alone=%v)", f.calls, c.writes.alone)
	}
}
