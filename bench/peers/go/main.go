// The Go worker of the peers benchmark (bench/peers/README.md): one workload on one system, driven by
// bench/peers/main.ts over stdin/stdout. It prints JSON lines on stdout: {"event":"ready"} when set up
// (the driver then reads every process's CPU and answers "go"), and {"event":"done",...} with the results.
//
//	peers-go --system fk|fk-sessions|etcd-mutex|etcd-election|redsync --workload W [flags]
//
// Workloads: cycles (acquire + release, each locker on its own resource), handover (a waiter queued
// before the holder releases), crash-holder / crash-waiter (the driver kills the holder), hold (many
// locks held until "stop"), timeline-holder / timeline-other (a paused holder writes to a store).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// locker is one client of a system: it acquires (waiting) and returns what it holds.
type locker interface {
	acquire(ctx context.Context, resource string) (held, error)
	close()
}

// held is one acquisition.
type held interface {
	release(ctx context.Context) error
	// write puts key = value in the system's store as the holder; each way of writing the system offers
	// is tried, and reported with whether the store took it.
	write(ctx context.Context, key, value string) []writeResult
	// alive says whether the holder still believes it holds the lock (renewals, where the system has them).
	alive() bool
}

type writeResult struct {
	How      string `json:"how"`
	Accepted bool   `json:"accepted"`
	Error    string `json:"error,omitempty"`
}

type config struct {
	system, workload, prefix string
	fk, etcd, redis          string
	lockers                  []int
	count                    int
	seconds                  float64
	ttl                      time.Duration
}

var out = json.NewEncoder(os.Stdout)
var stdin = bufio.NewScanner(os.Stdin)

func emit(v map[string]any) { _ = out.Encode(v) }

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "peers-go: "+format+"\n", a...)
	os.Exit(2)
}

// await reads the driver's next line and checks it is the expected word.
func await(word string) {
	if !stdin.Scan() {
		os.Exit(0) // the driver went away
	}
	if got := strings.TrimSpace(stdin.Text()); got != word {
		fail("expected %q from the driver, got %q", word, got)
	}
}

func main() {
	var c config
	var ttlSeconds float64
	flag.StringVar(&c.system, "system", "", "fk, fk-sessions, etcd-mutex, etcd-election or redsync")
	flag.StringVar(&c.workload, "workload", "", "cycles, handover, crash-holder, crash-waiter, hold, timeline-holder, timeline-other")
	flag.StringVar(&c.prefix, "prefix", "peers", "resource name prefix, unique to the run")
	flag.StringVar(&c.fk, "fk", "", "fencekeeper URL")
	flag.StringVar(&c.etcd, "etcd", "", "etcd endpoint")
	flag.StringVar(&c.redis, "redis", "", "Redis host:port")
	flag.String("zk", "", "ZooKeeper host:port (for the Java worker; ignored)")
	lockers := flag.String("lockers", "1", "lockers at a time; a comma-separated list runs each level in turn")
	flag.IntVar(&c.count, "count", 10000, "locks held (hold)")
	flag.Float64Var(&c.seconds, "seconds", 5, "seconds measured")
	flag.Float64Var(&ttlSeconds, "ttl", 10, "TTL of a lease / session / lock, seconds")
	flag.Parse()
	c.ttl = time.Duration(ttlSeconds * float64(time.Second))
	for _, l := range strings.Split(*lockers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || n < 1 {
			fail("--lockers: %q is not a number of at least 1", l)
		}
		c.lockers = append(c.lockers, n)
	}

	ctx := context.Background()
	newLocker := func() locker {
		l, err := open(ctx, c)
		if err != nil {
			fail("%s: %v", c.system, err)
		}
		return l
	}
	switch c.workload {
	case "cycles":
		cycles(ctx, c, newLocker())
	case "handover":
		handover(ctx, c, newLocker(), newLocker())
	case "crash-holder":
		l := newLocker()
		if _, err := l.acquire(ctx, c.prefix+"-crash"); err != nil {
			fail("acquire: %v", err)
		}
		emit(map[string]any{"event": "held"})
		select {} // until killed
	case "crash-waiter":
		l := newLocker()
		emit(map[string]any{"event": "waiting"})
		h, err := l.acquire(ctx, c.prefix+"-crash")
		if err != nil {
			fail("acquire: %v", err)
		}
		emit(map[string]any{"event": "granted"})
		_ = h.release(ctx)
		l.close()
	case "hold":
		hold(ctx, c, newLocker())
	case "timeline-holder":
		l := newLocker()
		h, err := l.acquire(ctx, c.prefix+"-timeline")
		if err != nil {
			fail("acquire: %v", err)
		}
		_ = h.write(ctx, "k", "holder-before-pause")
		emit(map[string]any{"event": "held"})
		await("write") // the driver paused this process past the lease, and let the other holder write
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		writes := h.write(wctx, "k", "holder-after-pause")
		cancel()
		emit(map[string]any{"event": "done", "writes": writes, "believedHeld": h.alive()})
	case "timeline-other":
		l := newLocker()
		h, err := l.acquire(ctx, c.prefix+"-timeline")
		if err != nil {
			fail("acquire: %v", err)
		}
		writes := h.write(ctx, "k", "next-holder")
		emit(map[string]any{"event": "done", "writes": writes})
		await("release")
		_ = h.release(ctx)
		l.close()
	default:
		fail("unknown --workload %q", c.workload)
	}
}

func open(ctx context.Context, c config) (locker, error) {
	switch c.system {
	case "fk", "fk-sessions":
		return openFencekeeper(c.fk, c.system == "fk-sessions", c.ttl)
	case "etcd-mutex", "etcd-election":
		return openEtcd(ctx, c.etcd, c.system == "etcd-election", c.ttl)
	case "redsync":
		return openRedsync(c.redis, c.ttl)
	}
	return nil, fmt.Errorf("unknown --system %q", c.system)
}

// cycles: acquire + release as fast as each locker can, each on a resource of its own; each level of
// lockers in turn, a ready/go/done exchange each.
func cycles(ctx context.Context, c config, l locker) {
	for _, lockers := range c.lockers {
		cyclesAt(ctx, c, l, lockers)
	}
	await("close")
	l.close()
}

func cyclesAt(ctx context.Context, c config, l locker, lockers int) {
	run := func(d time.Duration, record bool) (int64, int64, []time.Duration, string) {
		var ops, errs atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		firstErr := ""
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := 0; w < lockers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				resource := fmt.Sprintf("%s-%d-%d", c.prefix, lockers, w)
				var mine []time.Duration
				for time.Now().Before(deadline) {
					start := time.Now()
					h, err := l.acquire(ctx, resource)
					if err == nil {
						err = h.release(ctx)
					}
					if err != nil {
						errs.Add(1)
						mu.Lock()
						if firstErr == "" {
							firstErr = err.Error()
						}
						mu.Unlock()
						time.Sleep(10 * time.Millisecond)
						continue
					}
					ops.Add(1)
					if record {
						mine = append(mine, time.Since(start))
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}(w)
		}
		wg.Wait()
		return ops.Load(), errs.Load(), lat, firstErr
	}
	run(time.Duration(min(1, c.seconds/4)*float64(time.Second)), false) // warm-up: connections, sessions
	emit(map[string]any{"event": "ready"})
	await("go")
	start := time.Now()
	ops, errs, lat, firstErr := run(time.Duration(c.seconds*float64(time.Second)), true)
	elapsed := time.Since(start).Seconds()
	emit(map[string]any{"event": "done", "cycles": ops, "errors": errs, "firstError": firstErr, "seconds": elapsed,
		"perSecond": float64(ops) / elapsed, "p50Ms": percentile(lat, 0.5), "p99Ms": percentile(lat, 0.99)})
}

// handover: the holder holds; a waiter asks (and is queued) 20 ms before the holder releases; the time
// from the release call's start to the waiter's grant, and the release call's own time.
func handover(ctx context.Context, c config, holder, waiter locker) {
	resource := c.prefix + "-handover"
	one := func() (time.Duration, time.Duration, error) {
		h, err := holder.acquire(ctx, resource)
		if err != nil {
			return 0, 0, err
		}
		granted := make(chan time.Time, 1)
		failed := make(chan error, 1)
		var wh held
		go func() {
			x, err := waiter.acquire(ctx, resource)
			if err != nil {
				failed <- err
				return
			}
			wh = x
			granted <- time.Now()
		}()
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if err := h.release(ctx); err != nil {
			return 0, 0, err
		}
		released := time.Since(start)
		select {
		case t := <-granted:
			err := wh.release(ctx)
			return t.Sub(start), released, err
		case err := <-failed:
			return 0, 0, err
		case <-time.After(30 * time.Second):
			return 0, 0, errors.New("the waiter was not granted within 30 s of the release")
		}
	}
	for i := 0; i < 3; i++ { // warm-up
		if _, _, err := one(); err != nil {
			fail("handover: %v", err)
		}
	}
	emit(map[string]any{"event": "ready"})
	await("go")
	var lat, rel []time.Duration
	errs := 0
	firstErr := ""
	deadline := time.Now().Add(time.Duration(c.seconds * float64(time.Second)))
	for time.Now().Before(deadline) || len(lat) < 5 {
		d, r, err := one()
		if err != nil {
			errs++
			if firstErr == "" {
				firstErr = err.Error()
			}
			if errs > 10 {
				break
			}
			continue
		}
		lat = append(lat, d)
		rel = append(rel, r)
	}
	emit(map[string]any{"event": "done", "handovers": len(lat), "errors": errs, "firstError": firstErr,
		"p50Ms": percentile(lat, 0.5), "p99Ms": percentile(lat, 0.99), "releaseP50Ms": percentile(rel, 0.5)})
	await("close")
	holder.close()
	waiter.close()
}

// hold: count locks acquired (64 at a time), then held until the driver says "stop".
func hold(ctx context.Context, c config, l locker) {
	hs := make([]held, c.count)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= c.count {
					return
				}
				h, err := l.acquire(ctx, fmt.Sprintf("%s-%d", c.prefix, i))
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				hs[i] = h
			}
		}()
	}
	wg.Wait()
	acquired := 0
	for _, h := range hs {
		if h != nil {
			acquired++
		}
	}
	fe, _ := firstErr.Load().(string)
	emit(map[string]any{"event": "ready", "acquired": acquired, "acquireSeconds": time.Since(start).Seconds(), "firstError": fe})
	await("go")
	await("stop")
	alive := 0
	for _, h := range hs {
		if h != nil && h.alive() {
			alive++
		}
	}
	emit(map[string]any{"event": "done", "acquired": acquired, "stillHeld": alive})
	await("close")
	l.close()
}

func percentile(xs []time.Duration, p float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s)-1) + 0.5)
	return float64(s[i]) / float64(time.Millisecond)
}
