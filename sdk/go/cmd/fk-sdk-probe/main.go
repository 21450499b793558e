// fk-sdk-probe drives the Go client for the tests of test/sdk/go.test.ts:
//
//	fk-sdk-probe scenario --server URLS --resource R
//	    the conformance scenario of test/conformance/SCENARIO.md, through the library
//	fk-sdk-probe hold --server URLS --resource R [--ttl 2s] [--holder H] [--sessions] [--shared] [--lock-delay 3s] [--acquire-timeout 1s] [--preempt]
//	    acquires R (on a session with --sessions, shared with --shared; with --acquire-timeout, with a
//	    context.WithTimeout context whose cancel runs as Acquire returns, as a Go program would write it) and keeps it; prints one JSON line per event (granted, renewed, lost, stream-opened,
//	    stream-failed, ...), then runs the commands it reads on stdin, one a line:
//	      write K V   a write through the lease (checked first: a lost lease sends nothing)
//	      force K V   a write with the lease's token through the store, whatever the lease's state
//	      state       the lease's state: held, valid_until, last_confirmed_at
//	      release     releases the lease
//	      describe    Describe of the resource: held, holders, lock_delay_ms, lock_delay_until
//	      observe     the first message of Observe (the state now): held, holders, lock_delay_ms, lock_delay_until, max_holders, value
//	      acquire     another Acquire of the resource, without waiting: its error's type, or its token
//	    and exits at the end of stdin.
//	fk-sdk-probe elect --server URLS --resource R [--ttl 2s] [--holder H] [--value V] [--linger 1s]
//	    runs Lead on R (elect.go), printing elected, abort, returned, deposed, new-leader (each with its
//	    loop's number) and each change ObserveLeaders gives (leader); with --linger, OnElected goes on that
//	    long after its context ended; commands on stdin: resign, proclaim V, leader, second (a second
//	    client's Lead in this process), semaphore R N WAIT_MS, permit-write K V, describe-of R,
//	    release-permits; at the end of stdin it stops Lead and exits.
//	fk-sdk-probe reasons
//	    prints the error type the library returns for each reason of the generated ErrorReason enum ("" for
//	    none), and for NOT_FOUND without a reason, as one JSON object.
//
// Times are ms since the epoch (wall clock, with fractions); 64-bit integers are decimal strings.
// Credentials: --bearer JWT, --tls-ca FILE, --tls-cert FILE --tls-key FILE, as the conformance clients.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fk-sdk-probe scenario|hold --server URLS --resource R [--ttl 2s] [--holder H]")
		os.Exit(2)
	}
	command := os.Args[1]
	if command == "reasons" {
		bare := fencekeeper.FromStatus(status.New(codes.NotFound, "not found"))
		line, _ := json.Marshal(map[string]any{"reasons": fencekeeper.ErrorTypes(), "not_found_without_reason": strings.TrimPrefix(fmt.Sprintf("%T", bare), "*fencekeeper.")})
		fmt.Println(string(line))
		return
	}
	flags := flag.NewFlagSet(command, flag.ContinueOnError)
	server := flags.String("server", "", "server URLs, comma-separated")
	resource := flags.String("resource", "", "the resource")
	ttl := flags.Duration("ttl", 2*time.Second, "the lease TTL")
	holder := flags.String("holder", "go-probe", "the holder label")
	sessions := flags.Bool("sessions", false, "hold: acquire on a session (the default); without it, on a lease of its own (Options.OwnLeases)")
	lockDelay := flags.Duration("lock-delay", 0, "hold: the lock-delay (AcquireOptions.LockDelay)")
	shared := flags.Bool("shared", false, "hold: a shared acquisition (AcquireOptions.Shared)")
	value := flags.String("value", "", "elect: the value to campaign with")
	linger := flags.Duration("linger", 0, "elect: onElected goes on this long after its context ended")
	preempt := flags.Bool("preempt", false, "hold: take the resource from its holder (AcquireOptions.Preempt)")
	acquireTimeout := flags.Duration("acquire-timeout", 0, "hold: Acquire's context is a context.WithTimeout of this, cancelled once Acquire returns")
	rounds := flags.Int("rounds", 20, "cancel-race: how many rounds")
	waiters := flags.Int("waiters", 4, "cancel-race: waiting acquires cancelled each round")
	bearer := flags.String("bearer", "", "a JWT, sent as authorization: Bearer")
	ca := flags.String("tls-ca", "", "PEM CA of the server's certificate")
	cert := flags.String("tls-cert", "", "PEM client certificate")
	key := flags.String("tls-key", "", "PEM key of --tls-cert")
	if err := flags.Parse(os.Args[2:]); err != nil || *server == "" || *resource == "" {
		os.Exit(2)
	}
	creds, err := credentials(*bearer, *ca, *cert, *key)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	urls := strings.Split(*server, ",")
	switch command {
	case "scenario":
		if err := runScenario(context.Background(), urls, creds, *resource); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL", err)
			os.Exit(1)
		}
	case "hold":
		if err := hold(fencekeeper.Options{Servers: urls, Credentials: creds, OwnLeases: !*sessions}, *resource, fencekeeper.AcquireOptions{TTL: *ttl, Holder: *holder, Shared: *shared, LockDelay: *lockDelay, Preempt: *preempt}, *acquireTimeout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "cancel-race":
		if err := cancelRace(fencekeeper.Options{Servers: urls, Credentials: creds, OwnLeases: !*sessions}, *resource, *rounds, *waiters); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "elect":
		if err := elect(fencekeeper.Options{Servers: urls, Credentials: creds, Holder: *holder}, *resource, *ttl, *value, *linger); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		os.Exit(2)
	}
}

func credentials(bearer, ca, cert, key string) (fencekeeper.Credentials, error) {
	creds := fencekeeper.Credentials{Bearer: bearer}
	if ca == "" && cert == "" {
		return creds, nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return creds, err
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return creds, fmt.Errorf("--tls-ca %s holds no PEM certificate", ca)
		}
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return creds, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	creds.TLS = config
	return creds, nil
}

// printer writes one JSON object a line, from any goroutine.
type printer struct{ mu sync.Mutex }

func (p *printer) print(fields map[string]any) {
	line, _ := json.Marshal(fields)
	p.mu.Lock()
	defer p.mu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func ms(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }
func itoa(n int64) string    { return strconv.FormatInt(n, 10) }

func tokenJSON(t fencekeeper.Token) map[string]any {
	return map[string]any{"resource": t.Resource, "generation": itoa(t.Generation), "lease_id": itoa(t.LeaseID), "shared": t.Shared}
}

// outcome describes a write's result: ok with the fence, or the error's kind, code and reason.
func outcome(commit fencekeeper.Commit, err error) map[string]any {
	if err == nil {
		return map[string]any{"ok": true, "fence": itoa(commit.Fence)}
	}
	out := map[string]any{"ok": false, "message": err.Error()}
	var lost *fencekeeper.LeaseLostError
	var stale *fencekeeper.StaleTokenError
	var se *fencekeeper.StatusError
	switch {
	case errors.As(err, &lost):
		// Refused by the client itself: nothing was sent.
		out["error"], out["why"], out["sent"] = "LEASE_LOST", string(lost.Why), false
	case errors.As(err, &stale):
		out["error"], out["code"], out["reason"], out["fence"], out["sent"] = "STALE_TOKEN", stale.Code.String(), stale.Reason, itoa(stale.Fence), true
	case errors.As(err, &se):
		out["error"], out["code"], out["reason"], out["sent"] = se.Reason, se.Code.String(), se.Reason, true
	}
	return out
}

func hold(options fencekeeper.Options, resource string, acquire fencekeeper.AcquireOptions, acquireTimeout time.Duration) error {
	var p printer
	options.OnEvent = func(e fencekeeper.Event) {
		fields := map[string]any{"event": string(e.Type), "at": ms(e.At)}
		switch e.Type {
		case fencekeeper.EventSessionOpened:
			fields["session_id"] = itoa(e.SessionID)
		case fencekeeper.EventRenewed, fencekeeper.EventSessionRenewed:
			fields["sent_at"], fields["confirmed_at"], fields["valid_until"] = ms(e.SentAt), ms(e.ConfirmedAt), ms(e.ValidUntil)
		case fencekeeper.EventStreamOpened, fencekeeper.EventStreamFailed:
			fields["url"] = e.URL
		case fencekeeper.EventLost, fencekeeper.EventReleased, fencekeeper.EventAcquired, fencekeeper.EventKeepAliveSent:
			return // printed below, or too many
		}
		if e.Err != nil {
			fields["error"] = e.Err.Error()
		}
		p.print(fields)
	}
	c, err := fencekeeper.New(options)
	if err != nil {
		return err
	}
	defer c.Close()
	lease, err := acquireWithin(c, resource, acquire, acquireTimeout)
	if err != nil {
		return err
	}
	p.print(map[string]any{"event": "granted", "at": ms(time.Now()), "token": tokenJSON(lease.Token()), "ttl_ms": lease.TTL().Milliseconds(), "valid_until": ms(lease.ValidUntil())})
	// The loss signal, as a program would wait for it; LostAt is when Done closed.
	go func() {
		<-lease.Done()
		var lost *fencekeeper.LeaseLostError
		errors.As(lease.Err(), &lost)
		event := map[string]any{"event": "lost", "at": ms(lost.LostAt), "why": string(lost.Why), "valid_until": ms(lost.ValidUntil), "last_confirmed_at": ms(lost.LastConfirmedAt)}
		var preempted *fencekeeper.PreemptedError
		if errors.As(lost.Cause, &preempted) {
			event["reason"], event["by_generation"], event["by_principal"] = preempted.Reason, strconv.FormatInt(preempted.ByGeneration, 10), preempted.ByPrincipal
		}
		p.print(event)
	}()
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		args := strings.Fields(lines.Text())
		if len(args) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		switch {
		case args[0] == "write" && len(args) == 3:
			at := time.Now()
			commit, err := lease.Put(ctx, args[1], []byte(args[2]))
			p.print(merge(map[string]any{"event": "write", "at": ms(at), "done_at": ms(time.Now())}, outcome(commit, err)))
		case args[0] == "force" && len(args) == 3:
			at := time.Now()
			commit, err := c.Store().Put(ctx, lease.Token(), args[1], []byte(args[2]), fencekeeper.WithFenceMode(fencekeeper.FenceOrder))
			p.print(merge(map[string]any{"event": "force", "at": ms(at), "done_at": ms(time.Now())}, outcome(commit, err)))
		case args[0] == "state":
			p.print(map[string]any{"event": "state", "at": ms(time.Now()), "held": lease.Held(), "valid_until": ms(lease.ValidUntil()), "last_confirmed_at": ms(lease.LastConfirmedAt())})
		case args[0] == "describe":
			d, err := c.Describe(ctx, resource)
			if err != nil {
				p.print(map[string]any{"event": "describe", "at": ms(time.Now()), "error": err.Error()})
				break
			}
			holders := []map[string]any{}
			for _, h := range d.Holders {
				holders = append(holders, map[string]any{"holder": h.Holder, "generation": itoa(h.Token.Generation), "ttl_ms": h.TTL.Milliseconds()})
			}
			fields := map[string]any{"event": "describe", "at": ms(time.Now()), "held": d.Held, "holders": holders, "lock_delay_ms": d.LockDelay.Milliseconds()}
			if !d.LockDelayUntil.IsZero() {
				fields["lock_delay_until"] = ms(d.LockDelayUntil)
			}
			p.print(fields)
		case args[0] == "observe":
			// The first message of Observe: the resource's state now.
			fields := map[string]any{"event": "observe", "at": ms(time.Now())}
			for o, err := range c.Observe(ctx, resource) {
				if err != nil {
					fields["error"] = err.Error()
					break
				}
				holders := []map[string]any{}
				for _, h := range o.Holders {
					holders = append(holders, map[string]any{"holder": h.Holder, "generation": itoa(h.Token.Generation), "principal": h.Principal, "value": string(h.Value)})
				}
				fields["held"], fields["holders"], fields["lock_delay_ms"], fields["max_holders"], fields["value"] = o.Held, holders, o.LockDelay.Milliseconds(), o.MaxHolders, string(o.Value)
				if !o.LockDelayUntil.IsZero() {
					fields["lock_delay_until"] = ms(o.LockDelayUntil)
				}
				break
			}
			p.print(fields)
		case args[0] == "acquire":
			other, err := c.Acquire(ctx, resource, fencekeeper.AcquireOptions{TTL: acquire.TTL, Holder: acquire.Holder})
			fields := map[string]any{"event": "acquire", "at": ms(time.Now()), "ok": err == nil}
			if err != nil {
				fields["error"], fields["message"] = errorType(err), err.Error()
			} else {
				fields["token"] = tokenJSON(other.Token())
				other.Release(ctx)
			}
			p.print(fields)
		case args[0] == "release":
			lease.Release(ctx)
			p.print(map[string]any{"event": "released", "at": ms(time.Now())})
		default:
			p.print(map[string]any{"event": "error", "message": "unknown command: " + lines.Text()})
		}
		cancel()
	}
	return nil
}

// acquireWithin acquires with the everyday Go bound on a call: a context.WithTimeout, cancelled by a
// defer when the function returns. The lease outlives it.
func acquireWithin(c *fencekeeper.Client, resource string, o fencekeeper.AcquireOptions, timeout time.Duration) (*fencekeeper.Lease, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return c.Acquire(ctx, resource, o)
}

// errorType names the library's typed error in err: the outermost one errors.As finds.
func errorType(err error) string {
	var lockDelay *fencekeeper.LockDelayError
	var held *fencekeeper.ResourceHeldError
	var se *fencekeeper.StatusError
	switch {
	case errors.As(err, &lockDelay):
		return "LockDelayError"
	case errors.As(err, &held):
		return "ResourceHeldError"
	case errors.As(err, &se):
		return "StatusError " + se.Reason
	}
	return fmt.Sprintf("%T", err)
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}
