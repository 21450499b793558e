package fencekeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	grpcstatus "google.golang.org/grpc/status"
)

// One KeepAlive stream per client carries the renewals of every lease it holds, and one goroutine with
// one timer decides when each is renewed and when each is lost.
//
// Each lease is renewed every third of its TTL. The timer is armed for the earliest deadline or due
// renewal of all the client's leases. When it fires, leases whose deadline has passed are given up first
// (a renewal sent after the deadline could prove nothing), then every renewal due within the next
// batchWindow goes out in one KeepAliveRequest (lease_ids, up to maxIDsPerMessage), all with one send
// time, from which each lease's deadline counts once its answer confirms it. An answer that arrives after
// the deadline proves nothing. A lease has at most one renewal unanswered at a time.
//
// A stream that fails or ends, or that leaves a renewal unanswered for a whole renewal interval while
// answering nothing else in that time (a hung server or connection), is dropped; the next one opens on
// the next server, at once and then after a backoff, and the unanswered renewals go out again on it. A
// server that goes on answering, only slowly, keeps its stream.

const (
	// batchWindow: renewals due this soon after the one that woke the scheduler go out with it.
	batchWindow = 50 * time.Millisecond
	// retryAfter: a renewal answered UNAVAILABLE (it proves nothing) is tried again this soon.
	retryAfter = 200 * time.Millisecond
	// recheck: how often a renewal unanswered for a whole interval is looked at again.
	recheck = 2 * batchWindow
	// maxIDsPerMessage is the most lease ids the server takes in one KeepAliveRequest.
	maxIDsPerMessage = 10_000
)

// Backoff is how long the KeepAlive stream waits before reconnecting after the n-th failure in a row:
// at once after the first (another server may answer), then Base doubling up to Max, with jitter.
type Backoff struct {
	Base time.Duration // default 100 ms
	Max  time.Duration // default 2 s
}

func (b Backoff) delay(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	ceiling := min(b.Max, b.Base<<min(failures-1, 30))
	return ceiling/2 + rand.N(ceiling/2+1)
}

type entry struct {
	k      *keeper
	nextAt time.Time // when the next renewal is due
	sentAt time.Time // the unanswered renewal's send time (zero: none)
	sentOn *stream   // and the stream it went out on
}

type stream struct {
	url        string
	ctx        context.Context
	cancel     context.CancelFunc
	requests   chan []int64
	answeredAt time.Time // when an answer last came, or when it opened (under keepAlive.mu)
}

type keepAlive struct {
	servers *servers
	backoff Backoff
	emit    func(Event)
	wake    chan struct{}
	stop    chan struct{}

	mu          sync.Mutex
	entries     map[int64]*entry
	stream      *stream
	reconnectAt time.Time // while no stream: when the next may open
	failures    int
	closed      bool
}

func newKeepAlive(s *servers, b Backoff, emit func(Event)) *keepAlive {
	k := &keepAlive{servers: s, backoff: b, emit: emit, wake: make(chan struct{}, 1), stop: make(chan struct{}), entries: map[int64]*entry{}}
	go k.loop()
	return k
}

// add keeps r alive from now on; its first renewal is due at firstAt. One that has ended is not added.
func (k *keepAlive) add(r *keeper, firstAt time.Time) {
	k.mu.Lock()
	r.mu.Lock()
	ended := r.ended != ""
	r.mu.Unlock()
	if !ended && !k.closed {
		k.entries[r.id] = &entry{k: r, nextAt: firstAt}
	}
	k.mu.Unlock()
	k.poke()
}

// remove stops renewing r. The stream closes with the last lease.
func (k *keepAlive) remove(r *keeper) {
	k.mu.Lock()
	if e := k.entries[r.id]; e != nil && e.k == r {
		delete(k.entries, r.id)
	}
	if len(k.entries) == 0 && k.stream != nil {
		k.stream.cancel()
		k.stream = nil
	}
	k.mu.Unlock()
	k.poke()
}

func (k *keepAlive) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.closed = true
	k.entries = map[int64]*entry{}
	if k.stream != nil {
		k.stream.cancel()
		k.stream = nil
	}
	close(k.stop)
}

func (k *keepAlive) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// loop is the scheduler: one timer, re-armed after every pass for the earliest thing to do.
func (k *keepAlive) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := k.pass()
		timer.Reset(max(0, time.Until(next)))
		select {
		case <-timer.C:
		case <-k.wake:
		case <-k.stop:
			return
		}
	}
}

// pass gives up the leases past their deadline, sends the renewals due, and says when to run again.
func (k *keepAlive) pass() time.Time {
	now := time.Now()
	next := now.Add(time.Hour)
	var lost []*keeper
	var batches [][]int64
	var opened *stream
	var hung *entry

	k.mu.Lock()
	for id, e := range k.entries {
		// Deadlines first: a lease whose deadline passed is lost, whatever a renewal sent now would answer.
		if e.k.passed(now) {
			lost = append(lost, e.k)
			delete(k.entries, id)
		}
	}
	if len(k.entries) > 0 && k.stream == nil && !now.Before(k.reconnectAt) {
		opened = k.open()
	}
	s := k.stream
	var ids []int64
	for _, e := range k.entries {
		if s != nil && !e.nextAt.After(now.Add(batchWindow)) {
			switch {
			case e.sentOn == s && !e.sentAt.IsZero() && now.Sub(e.sentAt) >= e.k.interval:
				// Unanswered for a whole interval: the stream may be hung (failIfHung). Look again shortly.
				hung = e
				e.nextAt = now.Add(recheck)
			case e.sentOn == s && !e.sentAt.IsZero():
				e.nextAt = e.sentAt.Add(e.k.interval)
			default:
				e.sentAt, e.sentOn, e.nextAt = now, s, now.Add(e.k.interval)
				ids = append(ids, e.k.id)
				if len(ids) == maxIDsPerMessage {
					batches, ids = append(batches, ids), nil
				}
			}
		}
		if d := e.k.monoDeadline(); d.Before(next) {
			next = d
		}
		if s != nil && e.nextAt.Before(next) {
			next = e.nextAt
		}
	}
	if len(ids) > 0 {
		batches = append(batches, ids)
	}
	if s == nil && len(k.entries) > 0 && k.reconnectAt.Before(next) {
		next = k.reconnectAt
	}
	k.mu.Unlock()

	for _, r := range lost {
		r.lose(LostDeadline, nil)
	}
	if opened != nil {
		k.emit(Event{Type: EventStreamOpened, URL: opened.url})
	}
	for _, b := range batches {
		select {
		case s.requests <- b:
			k.emit(Event{Type: EventKeepAliveSent, URL: s.url, Leases: len(b)})
		default:
			k.fail(s, errors.New("the KeepAlive stream does not take requests"), true)
		}
	}
	if hung != nil {
		// Read what has arrived first: after a stall of this process, the answers waiting in the socket
		// are no sign of a hung server.
		time.AfterFunc(10*time.Millisecond, func() { k.failIfHung(s, hung) })
	}
	return next
}

// open starts a stream on the current server (under k.mu); its goroutine sends and receives.
func (k *keepAlive) open() *stream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{url: k.servers.current(), ctx: ctx, cancel: cancel, requests: make(chan []int64, 256), answeredAt: time.Now()}
	k.stream = s
	go k.serve(s)
	return s
}

func (k *keepAlive) serve(s *stream) {
	c, err := k.servers.connection(streamChannel, s.url)
	if err != nil {
		k.fail(s, err, false)
		return
	}
	st, err := c.lease.KeepAlive(s.ctx)
	if err != nil {
		k.fail(s, err, false)
		return
	}
	go func() {
		for {
			select {
			case ids := <-s.requests:
				if st.Send(&fencekeeperv1.KeepAliveRequest{LeaseIds: ids}) != nil {
					return // Recv reports why
				}
			case <-s.ctx.Done():
				return
			}
		}
	}()
	for {
		res, err := st.Recv()
		if err != nil {
			k.fail(s, err, false)
			return
		}
		k.answered(s, res, time.Now())
	}
}

// answered matches each answer to its lease's unanswered renewal on this stream.
func (k *keepAlive) answered(s *stream, res *fencekeeperv1.KeepAliveResponse, at time.Time) {
	renewals := res.GetRenewals()
	if len(renewals) == 0 {
		renewals = []*fencekeeperv1.LeaseRenewal{{LeaseId: res.GetLeaseId(), Ttl: res.GetTtl(), Error: res.GetError()}}
	}
	type outcome struct {
		k          *keeper
		sentAt     time.Time
		ttl        time.Duration
		validUntil time.Time
		err        error
		lost       LossCause
	}
	var outcomes []outcome
	k.mu.Lock()
	if k.stream != s {
		k.mu.Unlock()
		return
	}
	s.answeredAt = at
	k.failures = 0
	for _, r := range renewals {
		e := k.entries[r.GetLeaseId()]
		if e == nil || e.sentOn != s || e.sentAt.IsZero() {
			continue
		}
		o := outcome{k: e.k, sentAt: e.sentAt}
		e.sentAt, e.sentOn = time.Time{}, nil
		if r.GetError() != nil {
			o.err = statusError(grpcstatus.FromProto(r.GetError()), nil)
			var notFound *LeaseNotFoundError
			var preempted *PreemptedError
			if errors.As(o.err, &notFound) {
				// The lease is gone for good.
				o.lost = LostNotFound
				delete(k.entries, r.GetLeaseId())
			} else if errors.As(o.err, &preempted) {
				// Renewed no more: another acquisition took the resource.
				o.lost = LostPreempted
				delete(k.entries, r.GetLeaseId())
			} else {
				// UNAVAILABLE proves nothing: try again soon.
				e.nextAt = at.Add(min(retryAfter, e.k.interval))
			}
		} else if r.GetTtl() != nil {
			o.ttl = r.GetTtl().AsDuration()
			var ok bool
			if ok, o.validUntil = e.k.confirm(o.sentAt, o.ttl, at); !ok {
				o.lost = LostDeadline
				delete(k.entries, r.GetLeaseId())
			}
		}
		outcomes = append(outcomes, o)
	}
	k.mu.Unlock()
	for _, o := range outcomes {
		switch {
		case o.lost != "":
			o.k.lose(o.lost, o.err)
		case o.err != nil:
			k.emit(o.k.event(EventRenewalFailed, EventSessionRenewalFailed, Event{Err: o.err}))
		default:
			k.emit(o.k.event(EventRenewed, EventSessionRenewed, Event{SentAt: o.sentAt, ConfirmedAt: at, TTL: o.ttl, ValidUntil: o.validUntil}))
		}
	}
	k.poke()
}

// failIfHung drops the stream if e's renewal is still unanswered a whole interval after it was sent, and
// nothing at all has been answered on the stream for as long: the server or the connection is hung, and
// another server (or a new connection) may answer in time. A server that answers, only slowly, is kept:
// a new stream would queue behind the renewals it still works on.
func (k *keepAlive) failIfHung(s *stream, e *entry) {
	k.mu.Lock()
	now := time.Now()
	hung := k.stream == s && k.entries[e.k.id] == e && e.sentOn == s && !e.sentAt.IsZero() &&
		now.Sub(e.sentAt) >= e.k.interval && now.Sub(s.answeredAt) >= e.k.interval
	k.mu.Unlock()
	if hung {
		k.fail(s, fmt.Errorf("no answer to a renewal of lease %d within %v", e.k.id, e.k.interval), true)
	}
}

// fail drops a stream that failed; the renewals it left unanswered go out again on the next one.
func (k *keepAlive) fail(s *stream, err error, hung bool) {
	k.mu.Lock()
	if k.stream != s {
		k.mu.Unlock()
		return
	}
	k.stream = nil
	s.cancel()
	now := time.Now()
	for _, e := range k.entries {
		if e.sentOn == s {
			e.sentAt, e.sentOn, e.nextAt = time.Time{}, nil, now
		}
	}
	retryIn := k.backoff.delay(k.failures)
	k.failures++
	k.reconnectAt = now.Add(retryIn)
	keeping := len(k.entries) > 0
	// The next stream opens on the next server, whichever pass opens it.
	// A hung connection may be a dead one: the next stream on that server dials a fresh one.
	if hung {
		k.servers.reset(streamChannel, s.url)
	}
	k.servers.failed(s.url)
	k.mu.Unlock()
	if keeping {
		k.emit(Event{Type: EventStreamFailed, URL: s.url, Err: err, RetryIn: retryIn})
	}
	k.poke()
}
