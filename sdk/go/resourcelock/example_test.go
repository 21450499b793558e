package resourcelock_test

import (
	"context"
	"log"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	fkresourcelock "github.com/fencekeeper/fencekeeper/sdk/go/resourcelock"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// client-go's leader-election example (k8s.io/client-go/examples/leader-election) with fencekeeper as
// its lock: only the lock (and the client it is made with) differs; the rest is client-go's.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := "controller-1"

	fk, err := fencekeeper.New(fencekeeper.Options{Servers: []string{"http://127.0.0.1:50051"}})
	if err != nil {
		log.Fatal(err)
	}
	defer fk.Close()
	// The backend line: client-go's &resourcelock.LeaseLock{...} on the Kubernetes API becomes this.
	lock := fkresourcelock.New(fk, "my-controller", resourcelock.ResourceLockConfig{Identity: id})

	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		ReleaseOnCancel: true,
		LeaseDuration:   15 * time.Second, // the fencekeeper lease's TTL
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				// Ends when client-go stops leading, and also the moment the lease is lost.
				ctx = lock.Context(ctx)
				token, _ := fkresourcelock.TokenFrom(ctx)
				// Every write the leader makes carries the token; a stale leader's is refused.
				if _, err := fk.Store().Put(ctx, token, "last-run", []byte(time.Now().String())); err != nil {
					log.Print(err)
				}
				<-ctx.Done()
			},
			OnStoppedLeading: func() { log.Printf("%s: leader lost", id) },
			OnNewLeader:      func(identity string) { log.Printf("new leader: %s", identity) },
		},
	})
}
