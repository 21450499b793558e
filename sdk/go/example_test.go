package fencekeeper_test

import (
	"context"
	"log"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

// The README's example: hold "orders" while writing under its token. (Compiled by go vet; it needs a
// server to run, so it has no Output line and go test does not run it.)
func Example() {
	ctx := context.Background()
	fk, err := fencekeeper.New(fencekeeper.Options{Servers: []string{"http://127.0.0.1:50051"}})
	if err != nil {
		log.Fatal(err)
	}
	defer fk.Close()
	err = fencekeeper.WithLease(ctx, fk, "orders", fencekeeper.AcquireOptions{TTL: 10 * time.Second, Wait: true},
		func(ctx context.Context, lease *fencekeeper.Lease) error {
			_, err := lease.Put(ctx, "total", []byte("17")) // carries the token; refused once a newer holder wrote
			return err
		})
	if err != nil {
		log.Fatal(err) // *fencekeeper.LeaseLostError, *fencekeeper.StaleTokenError, ...
	}
}
