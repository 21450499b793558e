package fencekeeper

import (
	"context"
	"iter"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
)

// FenceMode is how the store judges a write's token.
type FenceMode = fencekeeperv1.FenceMode

const (
	// FenceUnspecified leaves the choice to the server, whose default is FenceOrder.
	FenceUnspecified = fencekeeperv1.FenceMode_FENCE_MODE_UNSPECIFIED
	// FenceOrder: the token's generation is at least the resource's fence.
	FenceOrder = fencekeeperv1.FenceMode_FENCE_MODE_ORDER
	// FenceLive: that, and the token's lease is still held in etcd.
	FenceLive = fencekeeperv1.FenceMode_FENCE_MODE_LIVE
)

type writeOptions struct {
	mode           FenceMode
	idempotencyKey string
}

// WriteOption sets an option of one write.
type WriteOption func(*writeOptions)

// WithFenceMode sets the fence mode of a write.
func WithFenceMode(m FenceMode) WriteOption { return func(o *writeOptions) { o.mode = m } }

// WithIdempotencyKey makes a retry with the same key and request return the first result, applying nothing.
func WithIdempotencyKey(key string) WriteOption {
	return func(o *writeOptions) { o.idempotencyKey = key }
}

// Commit is the outcome of a write.
type Commit struct {
	// Revision is the etcd revision of the write.
	Revision int64
	// Fence is the resource's fence after the write: the token's generation.
	Fence int64
	// Replayed: this is the recorded answer of an earlier request with the same idempotency key.
	Replayed bool
}

// GetResult is what Get read.
type GetResult struct {
	Found       bool
	Value       []byte
	ModRevision int64
	// Fence is the resource's fence when the key was read.
	Fence int64
}

// Entry is one key of a List.
type Entry struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// TxnOp is one operation of a transaction: TxnPut or TxnDelete.
type TxnOp struct {
	Key    string
	Value  []byte
	Delete bool
}

// TxnPut puts key = value in a transaction.
func TxnPut(key string, value []byte) TxnOp { return TxnOp{Key: key, Value: value} }

// TxnDelete deletes key in a transaction.
func TxnDelete(key string) TxnOp { return TxnOp{Key: key, Delete: true} }

// Store is the fenced store with explicit tokens, for a program that keeps tokens itself; writes through
// a Lease attach its token and check it first.
type Store struct{ c *Client }

// Store gives the fenced store's calls with explicit tokens.
func (c *Client) Store() Store { return Store{c} }

func mutation(token *Token, opts []WriteOption) *fencekeeperv1.Mutation {
	if token == nil {
		return nil
	}
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return &fencekeeperv1.Mutation{Token: token.proto(), Mode: o.mode, IdempotencyKey: o.idempotencyKey}
}

func commitOf(c *fencekeeperv1.Commit) Commit {
	return Commit{Revision: c.GetRevision(), Fence: c.GetFence(), Replayed: c.GetReplayed()}
}

// Put writes key = value in the token's resource. A write is not repeated on another server unless its
// connection was refused: give an idempotency key to retry it safely. Concurrent Puts and Deletes of one
// client are coalesced into Batch calls (Options.DisableWriteCoalescing); each still gets its own answer.
func (s Store) Put(ctx context.Context, token Token, key string, value []byte, opts ...WriteOption) (Commit, error) {
	return s.put(ctx, token.Resource, &token, key, value, opts)
}

func (s Store) put(ctx context.Context, resource string, token *Token, key string, value []byte, opts []WriteOption) (Commit, error) {
	req := &fencekeeperv1.PutRequest{Resource: resource, Key: key, Value: value, Mutation: mutation(token, opts)}
	return s.write(ctx, &fencekeeperv1.BatchWrite{Write: &fencekeeperv1.BatchWrite_Put{Put: req}})
}

// Delete deletes key from the token's resource.
func (s Store) Delete(ctx context.Context, token Token, key string, opts ...WriteOption) (Commit, error) {
	req := &fencekeeperv1.DeleteRequest{Resource: token.Resource, Key: key, Mutation: mutation(&token, opts)}
	return s.write(ctx, &fencekeeperv1.BatchWrite{Write: &fencekeeperv1.BatchWrite_Delete{Delete: req}})
}

// write sends a Put or Delete: through the client's batcher, which coalesces concurrent writes into Batch
// calls (write_batcher.go), unless Options.DisableWriteCoalescing turned it off.
func (s Store) write(ctx context.Context, w *fencekeeperv1.BatchWrite) (Commit, error) {
	var commit *fencekeeperv1.Commit
	var err error
	if s.c.writes != nil {
		commit, err = s.c.writes.write(ctx, w)
	} else {
		commit, err = s.c.sendWrite(ctx, w)
	}
	return commitOf(commit), err
}

// Txn applies ops to the token's resource atomically.
func (s Store) Txn(ctx context.Context, token Token, ops []TxnOp, opts ...WriteOption) (Commit, error) {
	req := &fencekeeperv1.TxnRequest{Resource: token.Resource, Mutation: mutation(&token, opts)}
	for _, op := range ops {
		if op.Delete {
			req.Ops = append(req.Ops, &fencekeeperv1.TxnOp{Op: &fencekeeperv1.TxnOp_Delete{Delete: &fencekeeperv1.TxnDelete{Key: op.Key}}})
		} else {
			req.Ops = append(req.Ops, &fencekeeperv1.TxnOp{Op: &fencekeeperv1.TxnOp_Put{Put: &fencekeeperv1.TxnPut{Key: op.Key, Value: op.Value}}})
		}
	}
	var res *fencekeeperv1.TxnResponse
	err := s.c.call(ctx, false, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.store.Txn(ctx, req)
		return err
	})
	return commitOf(res.GetCommit()), err
}

// Get reads key from resource.
func (s Store) Get(ctx context.Context, resource, key string) (GetResult, error) {
	var res *fencekeeperv1.GetResponse
	err := s.c.call(ctx, true, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.store.Get(ctx, &fencekeeperv1.GetRequest{Resource: resource, Key: key})
		return err
	})
	return GetResult{Found: res.GetFound(), Value: res.GetValue(), ModRevision: res.GetModRevision(), Fence: res.GetFence()}, err
}

// List yields every entry of resource whose key starts with prefix, in key order, fetched a page at a
// time from one snapshot; a failure is yielded as the last error.
func (s Store) List(ctx context.Context, resource, prefix string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		pageToken := ""
		for {
			var page *fencekeeperv1.RangeResponse
			err := s.c.call(ctx, true, func(ctx context.Context, cn *conn) (err error) {
				page, err = cn.store.Range(ctx, &fencekeeperv1.RangeRequest{Resource: resource, Prefix: prefix, PageToken: pageToken})
				return err
			})
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for _, e := range page.GetEntries() {
				if !yield(Entry{Key: e.GetKey(), Value: e.GetValue(), ModRevision: e.GetModRevision()}, nil) {
					return
				}
			}
			if pageToken = page.GetNextPageToken(); pageToken == "" {
				return
			}
		}
	}
}

// Fence is the resource's fence (the greatest generation accepted) and the greatest generation issued.
func (s Store) Fence(ctx context.Context, resource string) (fence, lastIssued int64, err error) {
	var res *fencekeeperv1.GetFenceResponse
	err = s.c.call(ctx, true, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.store.GetFence(ctx, &fencekeeperv1.GetFenceRequest{Resource: resource})
		return err
	})
	return res.GetFence(), res.GetLastIssued(), err
}
