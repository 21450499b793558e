// fk-controller-runtime-probe is a controller-runtime manager (sigs.k8s.io/controller-runtime) electing
// through sdk/go/resourcelock, with no Kubernetes API server, for
// test/integrations/controller-runtime.test.ts:
//
//	fk-controller-runtime-probe --server URLS --resource R --identity ID [--lease-duration 3s] [--renew-deadline 2s]
//	    [--retry-period 500ms] [--stop-on-loss]
//
// The manager gets the lock as its LeaderElectionResourceLockInterface, with LeaderElectionReleaseOnCancel,
// and one runnable that needs leader election (a manager.RunnableFunc): the manager starts it once
// elected. The runnable wraps its context with the lock (Lock.Context) and takes the term's token from it.
// The manager's rest.Config names a listener of this process as the API server, which nothing is expected
// to contact: the manager runs no controller, cache or webhook, its metrics and health probes serve
// nowhere, and the lock's events go to no recorder.
//
// It prints one JSON line per event:
//
//	ready                     the manager is made and started
//	observed-leader identity  the elector read the record of identity (its first read, and each change);
//	                          identity is empty while nobody holds the resource
//	elected generation        the runnable started: the token of the term (TokenFrom(lock.Context(ctx)))
//	lost why valid_until      the lock's context ended with the SDK's loss signal (*fencekeeper.LeaseLostError)
//	ended cause               the lock's context ended otherwise (the manager stopped the runnable)
//	stopped error             the manager's Start returned, with its error if any
//	api-contacted             something connected to the API server of the rest.Config
//
// With --stop-on-loss the runnable returns the loss as its error, so that the manager stops at the SDK's
// loss signal; without it the runnable returns nil and the manager stops when client-go's renewal gives
// up (controller-runtime's "leader election lost").
//
// Commands on stdin, one a line:
//
//	write K V   a write of K = V through the fenced store (FENCE_MODE_LIVE) with the token of the last term
//	            this process was elected for, whatever became of it: write ok generation fence, or error reason
//	release     cancels the manager's context (the elector releases the lease): released why, once Start returned
//
// At the end of stdin it cancels the manager's context and exits: 1 if Start returned an error (a lost
// leadership, as controller-runtime's programs exit on it), else 0. Times are ms since the epoch; 64-bit
// integers are decimal strings.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"github.com/fencekeeper/fencekeeper/sdk/go/resourcelock"
	"github.com/fencekeeper/fencekeeper/sdk/go/resourcelock/internal/probeio"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// observing is the lock as the manager gets it: every call is the lock's, and a Get that reads another
// holder than the previous one is printed (controller-runtime's manager has no OnNewLeader to print it).
type observing struct {
	rl.Interface
	mu   sync.Mutex
	last *string
}

func (o *observing) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	record, raw, err := o.Interface.Get(ctx)
	if err == nil {
		o.mu.Lock()
		changed := o.last == nil || *o.last != record.HolderIdentity
		if changed {
			identity := record.HolderIdentity
			o.last = &identity
		}
		o.mu.Unlock()
		if changed {
			probeio.Emit("observed-leader", map[string]any{"identity": record.HolderIdentity})
		}
	}
	return record, raw, err
}

// apiServer is a listener that stands for the Kubernetes API server in the manager's rest.Config: any
// connection to it is printed (api-contacted) and closed.
func apiServer() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			probeio.Emit("api-contacted", map[string]any{"remote": conn.RemoteAddr().String()})
			conn.Close()
		}
	}()
	return "http://" + l.Addr().String(), nil
}

func main() {
	server := flag.String("server", "", "server URLs, comma-separated")
	resource := flag.String("resource", "", "the resource to elect on (also the manager's LeaderElectionID)")
	identity := flag.String("identity", "", "this candidate's identity")
	leaseDuration := flag.Duration("lease-duration", 3*time.Second, "manager.Options.LeaseDuration (the lease's TTL)")
	renewDeadline := flag.Duration("renew-deadline", 2*time.Second, "manager.Options.RenewDeadline")
	retryPeriod := flag.Duration("retry-period", 500*time.Millisecond, "manager.Options.RetryPeriod")
	stopOnLoss := flag.Bool("stop-on-loss", false, "the runnable returns the lease's loss as its error, which stops the manager")
	flag.Parse()
	if *server == "" || *resource == "" || *identity == "" {
		fmt.Fprintln(os.Stderr, "usage: fk-controller-runtime-probe --server URLS --resource R --identity ID")
		os.Exit(2)
	}
	// controller-runtime's log, and so the manager's, to stderr.
	crlog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))

	fk, err := fencekeeper.New(fencekeeper.Options{Servers: strings.Split(*server, ","), Holder: *identity})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lock := resourcelock.New(fk, *resource, rl.ResourceLockConfig{Identity: *identity})

	api, err := apiServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := manager.New(&rest.Config{Host: api}, manager.Options{
		Metrics:                             metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:              "0",
		LeaderElection:                      true,
		LeaderElectionResourceLockInterface: &observing{Interface: lock},
		LeaderElectionID:                    *resource,
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       leaseDuration,
		RenewDeadline:                       renewDeadline,
		RetryPeriod:                         retryPeriod,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager.New:", err)
		os.Exit(1)
	}

	var mu sync.Mutex
	var elected *fencekeeper.Token // the token of the last term this process was elected for

	// A RunnableFunc needs leader election: the manager starts it once elected, with its own context.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		leading := lock.Context(ctx)
		token, ok := resourcelock.TokenFrom(leading)
		if !ok {
			probeio.Emit("ended", map[string]any{"cause": context.Cause(leading).Error()})
			return nil
		}
		mu.Lock()
		elected = &token
		mu.Unlock()
		probeio.Emit("elected", map[string]any{"generation": strconv.FormatInt(token.Generation, 10)})
		<-leading.Done()
		cause := context.Cause(leading)
		var lost *fencekeeper.LeaseLostError
		if errors.As(cause, &lost) {
			probeio.Emit("lost", probeio.LossFields(lost))
			if *stopOnLoss {
				return lost
			}
			return nil
		}
		probeio.Emit("ended", map[string]any{"cause": cause.Error(), "generation": strconv.FormatInt(token.Generation, 10)})
		return nil
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager.Add:", err)
		os.Exit(1)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	var startErr error
	go func() {
		defer close(done)
		startErr = mgr.Start(ctx)
		fields := map[string]any{}
		if startErr != nil {
			fields["error"] = startErr.Error()
		}
		probeio.Emit("stopped", fields)
	}()
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
	})
	stop()
	<-done
	fk.Close()
	if startErr != nil {
		os.Exit(1)
	}
}
