package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

// elect runs Lead on resource and the election and semaphore commands of the SDK suite
// (test/sdk/sdk-suite.ts) and of test/sdk/election-three-languages.test.ts, printing one JSON line per
// event, as the other languages' probes do.
func elect(options fencekeeper.Options, resource string, ttl time.Duration, value string, linger time.Duration) error {
	var p printer
	c, err := fencekeeper.New(options)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var mu sync.Mutex
	var current *fencekeeper.Leadership
	var permits []*fencekeeper.Lease

	go func() {
		for change, err := range c.ObserveLeaders(ctx, resource) {
			if err != nil {
				p.print(map[string]any{"event": "observe-error", "at": ms(time.Now()), "error": err.Error()})
				return
			}
			p.print(merge(map[string]any{"event": "leader", "at": ms(time.Now()), "revision": itoa(change.Revision)}, leaderJSON(change.Leader)))
		}
	}()
	// lead runs a lead loop of its own client (the first: c) and tags its events with its number. With
	// linger, onElected goes on for that long after its context ended, as code that ignores it would.
	lead := func(c *fencekeeper.Client, n int) chan error {
		led := make(chan error, 1)
		tag := func(fields map[string]any) map[string]any {
			fields["loop"] = n
			return fields
		}
		go func() {
			led <- c.Lead(ctx, resource, fencekeeper.LeadCallbacks{
				OnElected: func(lctx context.Context, token fencekeeper.Token, l *fencekeeper.Leadership) error {
					mu.Lock()
					current = l
					mu.Unlock()
					p.print(tag(map[string]any{"event": "elected", "at": ms(time.Now()), "token": tokenJSON(token), "valid_until": ms(l.ValidUntil())}))
					<-lctx.Done()
					var lost *fencekeeper.LeaseLostError
					errors.As(context.Cause(lctx), &lost)
					p.print(tag(map[string]any{"event": "abort", "at": ms(time.Now()), "generation": itoa(token.Generation), "why": string(lost.Why), "valid_until": ms(lost.ValidUntil), "lost_at": ms(lost.LostAt)}))
					time.Sleep(linger)
					p.print(tag(map[string]any{"event": "returned", "at": ms(time.Now()), "generation": itoa(token.Generation)}))
					return nil
				},
				OnDeposed: func(err error) {
					var lost *fencekeeper.LeaseLostError
					errors.As(err, &lost)
					p.print(tag(map[string]any{"event": "deposed", "at": ms(time.Now()), "generation": itoa(lost.Token.Generation), "why": string(lost.Why)}))
				},
				OnNewLeader: func(l *fencekeeper.Leader) {
					p.print(tag(merge(map[string]any{"event": "new-leader", "at": ms(time.Now())}, leaderJSON(l))))
				},
			}, fencekeeper.LeadOptions{TTL: ttl, Value: []byte(value)})
		}()
		return led
	}
	led := lead(c, 1)
	var second chan error

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		args := strings.Fields(lines.Text())
		if len(args) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		mu.Lock()
		l := current
		mu.Unlock()
		switch {
		case args[0] == "resign" && l != nil:
			l.Resign(cctx)
			p.print(map[string]any{"event": "resigned", "at": ms(time.Now()), "generation": itoa(l.Token().Generation)})
		case args[0] == "proclaim" && len(args) == 2 && l != nil:
			revision, err := l.Proclaim(cctx, []byte(args[1]))
			fields := map[string]any{"event": "proclaim", "at": ms(time.Now()), "ok": err == nil, "revision": itoa(revision)}
			if err != nil {
				fields["error"] = errorType(err)
			}
			p.print(fields)
		case args[0] == "second" && second == nil:
			options.Holder += "-2"
			other, err := fencekeeper.New(options)
			if err != nil {
				p.print(map[string]any{"event": "error", "message": err.Error()})
				break
			}
			defer other.Close()
			second = lead(other, 2)
			p.print(map[string]any{"event": "second-started", "at": ms(time.Now())})
		case args[0] == "leader":
			now, err := c.Leader(cctx, resource)
			fields := merge(map[string]any{"event": "leader-now", "at": ms(time.Now())}, leaderJSON(now))
			if err != nil {
				fields["error"] = err.Error()
			}
			p.print(fields)
		case args[0] == "semaphore" && len(args) == 4:
			n, _ := strconv.Atoi(args[2])
			wait, _ := strconv.Atoi(args[3])
			// WAIT_MS: 0 as long as it takes, -1 not at all (NoWait), else at most that long.
			permit, err := c.Semaphore(cctx, args[1], n, fencekeeper.AcquireOptions{TTL: ttl, WaitTimeout: time.Duration(max(wait, 0)) * time.Millisecond, NoWait: wait < 0})
			fields := map[string]any{"event": "permit", "at": ms(time.Now()), "ok": err == nil}
			if err != nil {
				fields["error"] = errorType(err)
				var se *fencekeeper.StatusError
				if errors.As(err, &se) {
					fields["reason"], fields["code"] = se.Reason, se.Code.String()
				}
			} else {
				fields["token"] = tokenJSON(permit.Token())
				mu.Lock()
				permits = append(permits, permit)
				mu.Unlock()
			}
			p.print(fields)
		case args[0] == "permit-write" && len(args) == 3 && len(permits) > 0:
			commit, err := permits[len(permits)-1].Put(cctx, args[1], []byte(args[2]), fencekeeper.WithFenceMode(fencekeeper.FenceOrder))
			p.print(merge(map[string]any{"event": "permit-write", "at": ms(time.Now())}, outcome(commit, err)))
		case args[0] == "describe-of" && len(args) == 2:
			d, err := c.Describe(cctx, args[1])
			if err != nil {
				p.print(map[string]any{"event": "described", "at": ms(time.Now()), "error": err.Error()})
				break
			}
			holders := []map[string]any{}
			for _, h := range d.Holders {
				holders = append(holders, map[string]any{"holder": h.Holder, "generation": itoa(h.Token.Generation), "shared": h.Token.Shared})
			}
			p.print(map[string]any{"event": "described", "at": ms(time.Now()), "held": d.Held, "value": string(d.Value), "max_holders": d.MaxHolders, "holders": holders})
		case args[0] == "release-permits":
			mu.Lock()
			for _, permit := range permits {
				permit.Release(cctx)
			}
			permits = nil
			mu.Unlock()
			p.print(map[string]any{"event": "permits-released", "at": ms(time.Now())})
		default:
			p.print(map[string]any{"event": "error", "message": "unknown command or nothing to do it on: " + lines.Text()})
		}
		cancel()
	}
	stop()
	err = <-led
	if second != nil {
		err = errors.Join(err, <-second)
	}
	fields := map[string]any{"event": "stopped", "at": ms(time.Now())}
	if err != nil {
		fields["error"] = err.Error()
	}
	p.print(fields)
	return nil
}

func leaderJSON(l *fencekeeper.Leader) map[string]any {
	if l == nil {
		return map[string]any{"holder": nil, "generation": nil, "value": nil}
	}
	return map[string]any{"holder": l.Holder, "generation": itoa(l.Token.Generation), "value": string(l.Value)}
}
