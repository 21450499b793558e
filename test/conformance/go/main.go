// The Go conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls that
// let the conformance test run it against the other languages' clients.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

const usage = `usage: fk-conformance scenario|acquire|put|get|release --server http://host:port --resource R [flags]
  scenario                                  run the whole scenario of SCENARIO.md
  acquire  --holder H [--ttl SECONDS]       print the token
  put      --key K --value V --generation G --lease-id L
  get      --key K
  release  --generation G --lease-id L`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	command := os.Args[1]
	flags := flag.NewFlagSet(command, flag.ContinueOnError)
	server := flags.String("server", "", "the server, as http://host:port")
	resource := flags.String("resource", "", "the resource")
	holder := flags.String("holder", "go", "the holder label")
	ttl := flags.Int64("ttl", 2, "the lease TTL in seconds")
	key := flags.String("key", "", "the key")
	value := flags.String("value", "", "the value")
	generation := flags.Int64("generation", 0, "the token's generation")
	leaseID := flags.Int64("lease-id", 0, "the token's lease id")
	if err := flags.Parse(os.Args[2:]); err != nil || *server == "" || *resource == "" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	c, err := dial(*server)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer c.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token := &fencekeeperv1.FencingToken{Resource: *resource, Generation: *generation, LeaseId: *leaseID}

	var result map[string]any
	switch command {
	case "scenario":
		if err := runScenario(ctx, *server, *resource); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL", err)
			os.Exit(1)
		}
		return
	case "acquire":
		var res *fencekeeperv1.AcquireResponse
		res, err = c.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: *resource, Ttl: durationpb.New(time.Duration(*ttl) * time.Second), Holder: *holder})
		if err == nil {
			result = map[string]any{"generation": itoa(res.GetToken().GetGeneration()), "lease_id": itoa(res.GetToken().GetLeaseId())}
		}
	case "put":
		var res *fencekeeperv1.PutResponse
		res, err = c.store.Put(ctx, &fencekeeperv1.PutRequest{Resource: *resource, Key: *key, Value: []byte(*value), Mutation: &fencekeeperv1.Mutation{Token: token}})
		if err == nil {
			result = map[string]any{"fence": itoa(res.GetCommit().GetFence())}
		}
	case "get":
		var res *fencekeeperv1.GetResponse
		res, err = c.store.Get(ctx, &fencekeeperv1.GetRequest{Resource: *resource, Key: *key})
		if err == nil {
			result = map[string]any{"found": res.GetFound(), "value": string(res.GetValue())}
		}
	case "release":
		_, err = c.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: token})
		result = map[string]any{}
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		f, ok := failureOf(err)
		if !ok {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		result = map[string]any{"ok": false, "code": f.Code, "reason": f.Reason}
	} else {
		result["ok"] = true
	}
	line, _ := json.Marshal(result)
	fmt.Println(string(line))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
