// fk-client-go-probe is a candidate of client-go's leader election (leaderelection.RunOrDie) electing
// through this module's lock, for test/integrations/client-go.test.ts:
//
//	fk-client-go-probe --server URLS --resource R --identity ID [--lease-duration 3s] [--renew-deadline 2s] [--retry-period 500ms]
//
// It runs RunOrDie with ReleaseOnCancel, again each time it returns, and prints one JSON line per event:
//
//	ready                    the client and the lock are made; the campaign starts
//	new-leader identity      client-go's OnNewLeader
//	elected generation       OnStartedLeading: the token of the term (TokenFrom(lock.Context(ctx)))
//	lost why valid_until     the lock's context ended with the SDK's loss signal (*fencekeeper.LeaseLostError)
//	ended cause              the lock's context ended otherwise (client-go cancelled it: a release, say)
//	client-go-ended          the context client-go gave OnStartedLeading ended
//	stopped-leading          OnStoppedLeading
//	returned why valid_until RunOrDie returned; the state of the lock's last lease then
//
// Commands on stdin, one a line:
//
//	write K V   a write of K = V through the fenced store (FENCE_MODE_LIVE) with the token of the last term
//	            this process was elected for, whatever became of it: write ok generation fence, or error reason
//	release     ends the campaign (client-go releases the lease): released, once RunOrDie returned
//	campaign    campaigns again after a release
//
// At the end of stdin it ends the campaign and exits. Times are ms since the epoch; 64-bit integers are
// decimal strings.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"github.com/fencekeeper/fencekeeper/sdk/go/resourcelock"
	"github.com/fencekeeper/fencekeeper/sdk/go/resourcelock/internal/probeio"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	server := flag.String("server", "", "server URLs, comma-separated")
	resource := flag.String("resource", "", "the resource to elect on")
	identity := flag.String("identity", "", "this candidate's identity")
	leaseDuration := flag.Duration("lease-duration", 3*time.Second, "LeaderElectionConfig.LeaseDuration (the lease's TTL)")
	renewDeadline := flag.Duration("renew-deadline", 2*time.Second, "LeaderElectionConfig.RenewDeadline")
	retryPeriod := flag.Duration("retry-period", 500*time.Millisecond, "LeaderElectionConfig.RetryPeriod")
	flag.Parse()
	if *server == "" || *resource == "" || *identity == "" {
		fmt.Fprintln(os.Stderr, "usage: fk-client-go-probe --server URLS --resource R --identity ID")
		os.Exit(2)
	}
	fk, err := fencekeeper.New(fencekeeper.Options{Servers: strings.Split(*server, ","), Holder: *identity})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer fk.Close()
	lock := resourcelock.New(fk, *resource, rl.ResourceLockConfig{Identity: *identity})

	var mu sync.Mutex
	var elected *fencekeeper.Token // the token of the last term this process was elected for

	config := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		ReleaseOnCancel: true,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		Name:            *resource,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading := lock.Context(ctx)
				token, ok := resourcelock.TokenFrom(leading)
				if !ok {
					probeio.Emit("ended", map[string]any{"cause": context.Cause(leading).Error()})
					return
				}
				mu.Lock()
				elected = &token
				mu.Unlock()
				probeio.Emit("elected", map[string]any{"generation": strconv.FormatInt(token.Generation, 10)})
				go func() {
					<-ctx.Done()
					probeio.Emit("client-go-ended", map[string]any{"generation": strconv.FormatInt(token.Generation, 10)})
				}()
				<-leading.Done()
				cause := context.Cause(leading)
				var lost *fencekeeper.LeaseLostError
				if errors.As(cause, &lost) {
					probeio.Emit("lost", probeio.LossFields(lost))
				} else {
					probeio.Emit("ended", map[string]any{"cause": cause.Error(), "generation": strconv.FormatInt(token.Generation, 10)})
				}
			},
			OnStoppedLeading: func() { probeio.Emit("stopped-leading", nil) },
			OnNewLeader:      func(id string) { probeio.Emit("new-leader", map[string]any{"identity": id}) },
		},
	}

	// campaign runs RunOrDie until ctx ends, again each time it returns.
	campaign := func(ctx context.Context) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				leaderelection.RunOrDie(ctx, config)
				fields := map[string]any{}
				if lease := lock.Lease(); lease != nil {
					fields = probeio.LossFields(lease.Err())
				}
				probeio.Emit("returned", fields)
			}
		}()
		return done
	}
	ctx, stop := context.WithCancel(context.Background())
	done := campaign(ctx)
	probeio.Emit("ready", nil)

	probeio.Serve(map[string]func([]string){
		"write": func(args []string) {
			mu.Lock()
			token := elected
			mu.Unlock()
			probeio.Write(fk, token, args)
		},
		"release": func([]string) {
			stop()
			<-done
			probeio.Released(lock.Lease())
		},
		"campaign": func([]string) {
			stop()
			<-done
			ctx, stop = context.WithCancel(context.Background())
			done = campaign(ctx)
			probeio.Emit("campaigning", nil)
		},
	})
	stop()
	<-done
}
