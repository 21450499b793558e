package fencekeeper

import (
	"context"
	"fmt"
	"sync"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// writeCallsInFlight is how many write calls a client keeps in flight at once: two, so that one batch is
// on its way while the server commits the other (the server's committer keeps two etcd requests in flight
// for the same reason).
const writeCallsInFlight = 2

// writeBatcher coalesces the concurrent Puts and Deletes of one client (Store.Put, Store.Delete and the
// Lease's, which go through them) into FencedStoreService.Batch calls, with no timer: a write that finds
// a call free goes out at once as a plain Put or Delete, on its caller's goroutine and context; the writes
// that arrive while both calls are in flight wait, and the next free call carries all of them in one Batch
// (at most MaxBatchWrites writes and MaxBatchValueBytes of values). Each write still gets exactly its own
// answer: its commit, or the typed error its Put or Delete alone would have returned, idempotency keys
// included. A write whose context ends while it waits leaves the queue; one already sent returns its
// context's error at once, and may or may not apply, as a plain call cancelled in flight. A server older
// than Batch answers UNIMPLEMENTED: from then on, each write goes alone. The TypeScript client's
// client/write-batcher.ts does the same.
type writeBatcher struct {
	c *Client

	mu       sync.Mutex
	queue    []*pendingWrite
	inFlight int
	// alone is set once a server answered Batch with UNIMPLEMENTED.
	alone bool
}

type pendingWrite struct {
	ctx   context.Context
	write *fencekeeperv1.BatchWrite
	bytes int
	// done is closed once commit or err is set, or once alone says the caller sends its write itself.
	done   chan struct{}
	commit *fencekeeperv1.Commit
	err    error
	alone  bool
}

// write sends one write, alone or in a Batch with others, and returns its own answer.
func (b *writeBatcher) write(ctx context.Context, w *fencekeeperv1.BatchWrite) (*fencekeeperv1.Commit, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx)
	}
	b.mu.Lock()
	if b.alone {
		b.mu.Unlock()
		return b.c.sendWrite(ctx, w)
	}
	if b.inFlight < writeCallsInFlight && len(b.queue) == 0 {
		// A call is free: this write goes at once, as a plain call, with no wait for company.
		b.inFlight++
		b.mu.Unlock()
		defer b.finished()
		return b.c.sendWrite(ctx, w)
	}
	p := &pendingWrite{ctx: ctx, write: w, bytes: len(w.GetPut().GetValue()), done: make(chan struct{})}
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		select {
		case <-p.done: // answered meanwhile: the answer stands
		default:
			b.mu.Lock()
			for i, q := range b.queue {
				if q == p {
					b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
					break
				}
			}
			b.mu.Unlock()
			return nil, contextError(ctx)
		}
	}
	if p.alone {
		return b.c.sendWrite(ctx, w)
	}
	return p.commit, p.err
}

// finished frees the call slot of a call that ended, and starts the next call for the writes that wait.
func (b *writeBatcher) finished() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	for b.inFlight < writeCallsInFlight && len(b.queue) > 0 {
		var batch []*pendingWrite
		batch, b.queue = takeBatch(b.queue, MaxBatchWrites, MaxBatchValueBytes)
		b.inFlight++
		go b.send(batch)
	}
}

func (b *writeBatcher) send(batch []*pendingWrite) {
	defer b.finished()
	b.mu.Lock()
	alone := b.alone
	b.mu.Unlock()
	if len(batch) == 1 || alone {
		for _, p := range batch {
			p.commit, p.err = b.c.sendWrite(p.ctx, p.write)
			close(p.done)
		}
		return
	}
	req := &fencekeeperv1.BatchRequest{Writes: make([]*fencekeeperv1.BatchWrite, len(batch))}
	for i, p := range batch {
		req.Writes[i] = p.write
	}
	// The call is made for every write of the batch, so no one caller's context bounds it: the client's
	// call timeout does. A caller whose context ends meanwhile returns at once.
	var res *fencekeeperv1.BatchResponse
	err := b.c.call(context.Background(), false, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.store.Batch(ctx, req)
		return err
	})
	if status.Code(err) == codes.Unimplemented {
		// A server without Batch applied none of them: each caller sends its own write, as before.
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
			// The whole call failed (no server answered, its deadline passed): each write may or may not
			// have applied, and gets the error its plain call would have.
			p.err = err
		case i >= len(res.GetResults()):
			st := status.New(codes.Internal, fmt.Sprintf("the server gave no answer for write %d of a batch of %d", i, len(batch)))
			p.err = statusError(st, st.Err())
		case res.GetResults()[i].GetError() != nil:
			st := status.FromProto(res.GetResults()[i].GetError())
			p.err = statusError(st, st.Err())
		default:
			p.commit = res.GetResults()[i].GetCommit()
		}
		close(p.done)
	}
}

// sendWrite sends one write as a plain Put or Delete.
func (c *Client) sendWrite(ctx context.Context, w *fencekeeperv1.BatchWrite) (commit *fencekeeperv1.Commit, err error) {
	err = c.call(ctx, false, func(ctx context.Context, cn *conn) error {
		if put := w.GetPut(); put != nil {
			res, err := cn.store.Put(ctx, put)
			commit = res.GetCommit()
			return err
		}
		res, err := cn.store.Delete(ctx, w.GetDelete())
		commit = res.GetCommit()
		return err
	})
	return commit, err
}

// contextError is the typed error of a call whose context ended (a *CanceledError or a *TimeoutError),
// as grpc-go reports it for a plain call; errors.Is also finds the context's error in it.
func contextError(ctx context.Context) error {
	return statusError(status.FromContextError(ctx.Err()), ctx.Err())
}
