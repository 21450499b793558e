package fencekeeper

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
)

// Semaphore takes a permit of a counting semaphore of n on resource (docs/semaphores.md): it waits in
// line, first come first served, until fewer than n hold it, and keeps the permit's lease alive until it
// is released or lost (Done, Context: decided from the send time of the last renewal, as for any lease).
// The permit's token is a shared token: the fenced store refuses its writes. o.Wait is implied (bound it
// with o.WaitTimeout or ctx; o.NoWait fails fast instead); o.MaxHolders and o.Shared are set for you. Every acquisition of the
// resource must name the same n while anyone holds or waits: another is a *StatusError with reason
// MAX_HOLDERS_MISMATCH (FAILED_PRECONDITION) naming the n in force.
func (c *Client) Semaphore(ctx context.Context, resource string, n int, o AcquireOptions) (*Lease, error) {
	if n < 1 {
		return nil, &InvalidArgumentError{&StatusError{Code: codes.InvalidArgument, Message: fmt.Sprintf("a semaphore needs at least 1 permit, got %d", n), Metadata: map[string]string{}}}
	}
	o.Wait, o.Shared, o.MaxHolders = !o.NoWait, true, n
	return c.Acquire(ctx, resource, o)
}
