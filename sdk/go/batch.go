package fencekeeper

import (
	"context"
	"fmt"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// BatchWrite is one write of Store.Batch: make it with BatchPut or BatchDelete.
type BatchWrite struct {
	Token   Token
	Key     string
	Value   []byte
	Delete  bool
	Options []WriteOption
}

// BatchPut is a write of key = value under token in a Batch.
func BatchPut(token Token, key string, value []byte, opts ...WriteOption) BatchWrite {
	return BatchWrite{Token: token, Key: key, Value: value, Options: opts}
}

// BatchDelete is a delete of key under token in a Batch.
func BatchDelete(token Token, key string, opts ...WriteOption) BatchWrite {
	return BatchWrite{Token: token, Key: key, Delete: true, Options: opts}
}

// BatchResult is the answer to one write of a Batch: what its Put or Delete alone would have returned.
type BatchResult struct {
	Commit Commit
	// Err is the typed error the write alone would have failed with (a *StaleTokenError, ...); nil when it committed.
	Err error
}

// MaxBatchWrites and MaxBatchValueBytes bound one Batch call (FencedStoreService.Batch).
const (
	MaxBatchWrites     = 1000
	MaxBatchValueBytes = 2 << 20
)

// Batch sends many independent puts and deletes in one FencedStoreService.Batch call, each with its own
// token, fence mode and idempotency key, each judged and applied on its own: results[i] answers
// writes[i]. It is not a transaction (Txn is): one write's refusal leaves the others be, and writes of
// one key in one batch may apply in either order. The error is the whole call's (the batch over its
// bounds, the server unreachable): then each write may or may not have applied; retry with idempotency
// keys to learn which. A server without Batch answers with an Unimplemented StatusError.
func (s Store) Batch(ctx context.Context, writes []BatchWrite) ([]BatchResult, error) {
	req := &fencekeeperv1.BatchRequest{Writes: make([]*fencekeeperv1.BatchWrite, len(writes))}
	for i, w := range writes {
		if w.Delete {
			req.Writes[i] = &fencekeeperv1.BatchWrite{Write: &fencekeeperv1.BatchWrite_Delete{Delete: &fencekeeperv1.DeleteRequest{
				Resource: w.Token.Resource, Key: w.Key, Mutation: mutation(&w.Token, w.Options)}}}
		} else {
			req.Writes[i] = &fencekeeperv1.BatchWrite{Write: &fencekeeperv1.BatchWrite_Put{Put: &fencekeeperv1.PutRequest{
				Resource: w.Token.Resource, Key: w.Key, Value: w.Value, Mutation: mutation(&w.Token, w.Options)}}}
		}
	}
	var res *fencekeeperv1.BatchResponse
	err := s.c.call(ctx, false, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.store.Batch(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	results := make([]BatchResult, len(writes))
	for i := range writes {
		if i >= len(res.GetResults()) {
			results[i].Err = statusError(grpcstatus.New(codes.Internal, fmt.Sprintf("the server gave no answer for write %d of a batch of %d", i, len(writes))), nil)
			continue
		}
		r := res.GetResults()[i]
		if e := r.GetError(); e != nil {
			results[i].Err = statusError(grpcstatus.FromProto(e), nil)
		} else {
			results[i].Commit = commitOf(r.GetCommit())
		}
	}
	return results, nil
}
