package fencekeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// MaxLeaseBatchOps and MaxLeaseBatchValueBytes are the server's bounds of one LeaseBatch call.
const (
	MaxLeaseBatchOps        = 1000
	MaxLeaseBatchValueBytes = 2 << 20
)

// lockCallsInFlight is how many LeaseBatch (or lone Acquire and Release) calls a client keeps in flight
// at once, as for writes: one batch on its way while the server commits the other.
const lockCallsInFlight = 2

// lockBatcher coalesces the concurrent acquisitions and releases of one client into LeaseService.LeaseBatch
// calls, as writeBatcher does for writes, with no timer: an op that finds a call free goes out at once as
// a plain Acquire or Release, on its caller's goroutine and context; the ops that arrive while both calls
// are in flight wait, and the next free call carries all of them in one LeaseBatch. Each op still gets
// exactly its own answer: its grant, or the typed error its call alone would have returned.
//
// A LeaseBatch answers when every op has, so an acquisition that waits in line never rides in one: it
// would hold up the others' answers. One with Wait that finds a call free goes alone, and is not counted
// as a call in flight (it may wait for minutes); one that arrives while calls are in flight rides in the
// next batch as a try (without wait), and if the resource is held (RESOURCE_HELD, LOCK_DELAY) its caller
// sends it again alone, as the waiting Acquire it was. A preempting Acquire always goes alone. A server
// older than LeaseBatch answers UNIMPLEMENTED: from then on, each op goes alone. The TypeScript client's
// client/lock-batcher.ts does the same.
type lockBatcher struct {
	c *Client

	mu       sync.Mutex
	queue    []*pendingLock
	inFlight int
	// alone is set once a server answered LeaseBatch with UNIMPLEMENTED.
	alone bool
}

type pendingLock struct {
	ctx   context.Context
	op    *fencekeeperv1.LeaseBatchOp
	bytes int
	// waits: an acquisition with Wait, riding as a try.
	waits bool
	// done is closed once res or err is set, or once alone says the caller sends its op itself.
	done  chan struct{}
	res   *fencekeeperv1.AcquireResponse
	err   error
	alone bool
}

// acquire sends one Acquire, alone or in a LeaseBatch with others, and returns its own answer.
func (b *lockBatcher) acquire(ctx context.Context, req *fencekeeperv1.AcquireRequest, waitTimeout time.Duration) (*fencekeeperv1.AcquireResponse, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx)
	}
	b.mu.Lock()
	free := b.inFlight < lockCallsInFlight && len(b.queue) == 0
	switch {
	case b.alone || req.Preempt || (req.Wait && free):
		// Alone, and not counted: a wait in line holds no call slot.
		b.mu.Unlock()
		return b.c.acquireCall(ctx, req, waitTimeout)
	case free:
		b.inFlight++
		b.mu.Unlock()
		defer b.finished()
		return b.c.acquireCall(ctx, req, waitTimeout)
	}
	try := req
	if req.Wait {
		try = proto.Clone(req).(*fencekeeperv1.AcquireRequest)
		try.Wait, try.WaitTimeout = false, nil
	}
	p := &pendingLock{ctx: ctx, op: &fencekeeperv1.LeaseBatchOp{Op: &fencekeeperv1.LeaseBatchOp_Acquire{Acquire: try}}, bytes: len(req.GetValue()), waits: req.Wait, done: make(chan struct{})}
	if err := b.await(p); err != nil {
		return nil, err
	}
	if p.alone {
		return b.c.acquireCall(ctx, req, waitTimeout)
	}
	return p.res, p.err
}

// release sends one Release, alone or in a LeaseBatch with others.
func (b *lockBatcher) release(ctx context.Context, token *fencekeeperv1.FencingToken) error {
	b.mu.Lock()
	switch {
	case b.alone:
		b.mu.Unlock()
		return b.c.releaseCall(ctx, token)
	case b.inFlight < lockCallsInFlight && len(b.queue) == 0:
		b.inFlight++
		b.mu.Unlock()
		defer b.finished()
		return b.c.releaseCall(ctx, token)
	}
	p := &pendingLock{ctx: ctx, op: &fencekeeperv1.LeaseBatchOp{Op: &fencekeeperv1.LeaseBatchOp_Release{Release: &fencekeeperv1.ReleaseRequest{Token: token}}}, done: make(chan struct{})}
	if err := b.await(p); err != nil {
		return err
	}
	if p.alone {
		return b.c.releaseCall(ctx, token)
	}
	return p.err
}

// await queues p (b.mu held on entry) and waits for its answer; an error when its context ended first.
func (b *lockBatcher) await(p *pendingLock) error {
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	select {
	case <-p.done:
		return nil
	case <-p.ctx.Done():
		select {
		case <-p.done: // answered meanwhile: the answer stands (a grant is released by the caller)
			return nil
		default:
		}
		b.mu.Lock()
		for i, q := range b.queue {
			if q == p {
				b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
				b.mu.Unlock()
				return contextError(p.ctx)
			}
		}
		b.mu.Unlock()
		// In flight: its answer decides (a grant the caller no longer wants is released by it).
		<-p.done
		return nil
	}
}

// finished frees the call slot of a call that ended, and starts the next call for the ops that wait.
func (b *lockBatcher) finished() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	for b.inFlight < lockCallsInFlight && len(b.queue) > 0 {
		var batch []*pendingLock
		batch, b.queue = takeBatch(b.queue, MaxLeaseBatchOps, MaxLeaseBatchValueBytes)
		b.inFlight++
		go b.send(batch)
	}
}

func (b *lockBatcher) send(batch []*pendingLock) {
	defer b.finished()
	b.mu.Lock()
	alone := b.alone
	b.mu.Unlock()
	if alone {
		for _, p := range batch {
			p.alone = true
			close(p.done)
		}
		return
	}
	req := &fencekeeperv1.LeaseBatchRequest{Ops: make([]*fencekeeperv1.LeaseBatchOp, len(batch))}
	repeatable := true
	for i, p := range batch {
		req.Ops[i] = p.op
		if p.op.GetAcquire() != nil {
			repeatable = false
		}
	}
	// The call is made for every op of the batch, so no one caller's context bounds it: the client's call
	// timeout does.
	var res *fencekeeperv1.LeaseBatchResponse
	err := b.c.call(context.Background(), repeatable, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.lease.LeaseBatch(ctx, req)
		return err
	})
	if status.Code(err) == codes.Unimplemented {
		// A server without LeaseBatch applied none of them: each caller sends its own op, as before.
		b.mu.Lock()
		b.alone = true
		b.mu.Unlock()
		for _, p := range batch {
			p.alone = true
			close(p.done)
		}
		return
	}
	for i, p := range batch {
		switch {
		case err != nil:
			p.err = err
		case i >= len(res.GetResults()):
			st := status.New(codes.Internal, fmt.Sprintf("the server gave no answer for op %d of a batch of %d", i, len(batch)))
			p.err = statusError(st, st.Err())
		case res.GetResults()[i].GetError() != nil:
			st := status.FromProto(res.GetResults()[i].GetError())
			p.err = statusError(st, st.Err())
			var se *StatusError
			if p.waits && errors.As(p.err, &se) && (se.Reason == "RESOURCE_HELD" || se.Reason == "LOCK_DELAY") {
				// Held: the acquisition that was to wait now waits, alone, on its caller's goroutine.
				p.err, p.alone = nil, true
			}
		default:
			p.res = res.GetResults()[i].GetAcquired()
		}
		close(p.done)
	}
}

// releaseCall sends one plain Release.
func (c *Client) releaseCall(ctx context.Context, token *fencekeeperv1.FencingToken) error {
	return c.call(ctx, true, func(ctx context.Context, cn *conn) error {
		_, err := cn.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: token})
		return err
	})
}
