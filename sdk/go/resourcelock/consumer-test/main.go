// client-go's leader-election example (k8s.io/client-go/examples/leader-election), run as a user's program
// outside the repository's modules would run it, with fencekeeper as its lock: the lock line and the
// fencekeeper client differ, the rest is client-go's. It leads once, writes under its term's token, then
// steps down (ReleaseOnCancel) and exits 0; scripts/setup-polyglot.sh builds it and
// test/integrations/client-go.test.ts runs it against a real server.
//
//	fk-client-go-user SERVER RESOURCE IDENTITY
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	fkresourcelock "github.com/fencekeeper/fencekeeper/sdk/go/resourcelock"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: fk-client-go-user SERVER RESOURCE IDENTITY")
	}
	server, resource, id := os.Args[1], os.Args[2], os.Args[3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	fk, err := fencekeeper.New(fencekeeper.Options{Servers: []string{server}})
	if err != nil {
		log.Fatal(err)
	}
	defer fk.Close()
	lock := fkresourcelock.New(fk, resource, resourcelock.ResourceLockConfig{Identity: id})

	failed := false
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		ReleaseOnCancel: true,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer cancel() // lead once: stepping down releases the lease
				ctx = lock.Context(ctx)
				token, ok := fkresourcelock.TokenFrom(ctx)
				if !ok {
					failed = true
					log.Print("no token in the leader's context")
					return
				}
				fmt.Printf("elected %s generation %d\n", id, token.Generation)
				rev, err := fk.Store().Put(ctx, token, "last-run", []byte(id))
				if err != nil {
					failed = true
					log.Printf("write: %v", err)
					return
				}
				fmt.Printf("wrote revision %d\n", rev.Revision)
			},
			OnStoppedLeading: func() { fmt.Printf("stopped leading %s\n", id) },
			OnNewLeader:      func(identity string) { fmt.Printf("new leader %s\n", identity) },
		},
	})
	if failed {
		os.Exit(1)
	}
}
