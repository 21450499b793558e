// The ten-line program of a user of the Go library: acquire, write under the token, release.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fk, err := fencekeeper.New(fencekeeper.Options{Servers: []string{os.Args[1]}})
	if err != nil {
		log.Fatal(err)
	}
	defer fk.Close()
	lease, err := fk.Acquire(ctx, os.Args[2], fencekeeper.AcquireOptions{TTL: 2 * time.Second, Wait: true})
	if err != nil {
		log.Fatal(err)
	}
	commit, err := lease.Put(ctx, "greeting", []byte("hello"))
	if err != nil {
		log.Fatal(err)
	}
	lease.Release(ctx)
	fmt.Printf("ok generation %d fence %d\n", lease.Token().Generation, commit.Fence)
}
