package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

// cancelRace: waiting acquires cancelled at the moment their turn comes leave nothing held (as
// sdk/python/tests/cancel_race.py). Each round a holder takes the resource, `waiters` clients wait in line
// (each on its own session with sessions), then the holder releases while every waiter's context is
// cancelled, after a delay that moves through the grant's window. A lease still returned is released;
// then the resource must be free within a second (Describe).
func cancelRace(options fencekeeper.Options, resource string, rounds, waiters int) error {
	ctx := context.Background()
	clients := make([]*fencekeeper.Client, waiters+1)
	for i := range clients {
		c, err := fencekeeper.New(options)
		if err != nil {
			return err
		}
		defer c.Close()
		clients[i] = c
	}
	first := clients[0]
	rng := rand.New(rand.NewSource(7))
	granted, canceled := 0, 0
	var leak map[string]any
	for n := 0; n < rounds && leak == nil; n++ {
		holder, err := first.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: 10 * time.Second, Wait: true, WaitTimeout: 10 * time.Second, Holder: "holder"})
		if err != nil {
			return fmt.Errorf("round %d: the holder: %w", n, err)
		}
		cancels := make([]context.CancelFunc, waiters)
		results := make([]*fencekeeper.Lease, waiters)
		errs := make([]error, waiters)
		var wg sync.WaitGroup
		for i := 0; i < waiters; i++ {
			wctx, cancel := context.WithCancel(ctx)
			cancels[i] = cancel
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i], errs[i] = clients[i+1].Acquire(wctx, resource, fencekeeper.AcquireOptions{TTL: 10 * time.Second, Wait: true, Holder: fmt.Sprintf("waiter-%d-%d", n, i)})
			}(i)
		}
		for t := 0; ; t++ {
			d, err := first.Describe(ctx, resource)
			if err != nil {
				return err
			}
			if d.Waiters >= waiters {
				break
			}
			if t > 1000 {
				return fmt.Errorf("round %d: the waiters never all stood in line", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		released := make(chan struct{})
		go func() { holder.Release(ctx); close(released) }()
		time.Sleep(time.Duration(rng.Intn(20_000)) * time.Microsecond)
		for _, cancel := range cancels {
			cancel()
		}
		<-released
		wg.Wait()
		for i, l := range results {
			var ce *fencekeeper.CanceledError
			var se *fencekeeper.StatusError
			switch {
			case l != nil:
				granted++
				l.Release(ctx)
			case errors.As(errs[i], &ce) || errors.Is(errs[i], context.Canceled) || (errors.As(errs[i], &se) && se.Code == codes.Canceled):
				canceled++
			default:
				return fmt.Errorf("round %d: waiter %d: %w", n, i, errs[i])
			}
		}
		freeBy := time.Now().Add(time.Second)
		for {
			d, err := first.Describe(ctx, resource)
			if err != nil {
				return err
			}
			if !d.Held {
				break
			}
			if time.Now().After(freeBy) {
				leak = map[string]any{"round": n, "holder": d.Holder}
				if d.Token != nil {
					leak["generation"] = d.Token.Generation
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	leaks := []map[string]any{}
	if leak != nil {
		leaks = append(leaks, leak)
	}
	line, _ := json.Marshal(map[string]any{"rounds": rounds, "granted": granted, "canceled": canceled, "leaks": leaks})
	fmt.Println(string(line))
	if leak != nil {
		return fmt.Errorf("leaked: %v", leak)
	}
	return nil
}
