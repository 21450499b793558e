package fencekeeper

import (
	"context"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// keeper is what keeps a Lease alive: an etcd lease of its own, or a session that many leases share (as
// etcd's concurrency.Session and Chubby's sessions). A keeper is what the KeepAlive stream renews and
// what has a deadline: the send time of its last confirmed renewal + TTL - drift margin. When it is lost
// (its deadline passed, or the server says it is gone) every lease it keeps is lost with it, at once; a
// lease that ends on its own (released, fenced, canceled) leaves a session to the others.
type keeper struct {
	id       int64 // the etcd lease: the lease's own, or the session's
	ttl      time.Duration
	interval time.Duration
	session  bool
	// lockDelay: acquired with a lock-delay. Lost at its deadline, it is left to expire: a release would
	// end it without the delay, which is there for its writes sent before the deadline still on their way.
	lockDelay bool
	c         *Client

	mu     sync.Mutex
	dl     deadline
	ended  LossCause // set once the keeper has ended
	lost   bool      // it ended by lose: every lease on it ends with it, for ended and cause
	cause  error
	leases map[*Lease]struct{}
	// cleaned closes once lose's cleanup on the server (Release, CloseSession) is done.
	cleaned chan struct{}
}

func newKeeper(c *Client, id int64, ttl time.Duration, session bool, sentAt, answeredAt time.Time) *keeper {
	return &keeper{id: id, ttl: ttl, interval: ttl / 3, session: session, c: c, dl: newDeadline(sentAt, ttl-c.drift(ttl), answeredAt), leases: map[*Lease]struct{}{}, cleaned: make(chan struct{})}
}

func (k *keeper) waitCleaned() { <-k.cleaned }

// start has the KeepAlive stream renew the keeper: first a renewal interval after the grant was sent.
func (k *keeper) start(sentAt time.Time) { k.c.keepAlive.add(k, sentAt.Add(k.interval)) }

// attach takes l on. A keeper that has ended takes no lease: one attached too late is lost with it.
func (k *keeper) attach(l *Lease) {
	k.mu.Lock()
	why := k.ended
	if why == "" {
		k.leases[l] = struct{}{}
	}
	k.mu.Unlock()
	if why != "" {
		done := make(chan struct{})
		close(done)
		l.finish(why, nil, done)
	}
}

// passed says whether the keeper is still on but its deadline has passed at now.
func (k *keeper) passed(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ended == "" && k.dl.passedAt(now)
}

// expireIfPassed looks at the clock: the keeper, and every lease on it, is lost once its deadline has
// passed. It says whether the keeper has ended.
func (k *keeper) expireIfPassed() bool {
	if k.passed(time.Now()) {
		k.lose(LostDeadline, nil)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ended != ""
}

// confirm takes in a renewal's answer; false if the deadline had passed when it came (or the keeper had ended).
func (k *keeper) confirm(sentAt time.Time, ttl time.Duration, at time.Time) (ok bool, validUntil time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended != "" || !k.dl.confirm(sentAt, ttl-k.c.drift(ttl), at) {
		return false, time.Time{}
	}
	return true, k.dl.validUntil()
}

func (k *keeper) monoDeadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dl.mono
}

func (k *keeper) state() (validUntil, confirmedAt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dl.validUntil(), k.dl.confirmedAt
}

// event fills e in as an event of this keeper: of its lease (own), or of the session (session).
func (k *keeper) event(own, session EventType, e Event) Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.session {
		e.Type, e.SessionID, e.Leases = session, k.id, len(k.leases)
		return e
	}
	e.Type = own
	for l := range k.leases {
		e.Token = l.token
	}
	return e
}

// lose ends the keeper, lost (LostDeadline, LostNotFound), or closed (LostReleased, by Client.Close),
// and every lease on it. Past its deadline the etcd lease may still be alive: it is released (a
// session: closed), so that its resources pass to the next in line at once; unless it has a
// lock-delay: then it is left to expire, and the delay to apply.
func (k *keeper) lose(why LossCause, cause error) {
	k.mu.Lock()
	if k.ended != "" {
		k.mu.Unlock()
		return
	}
	k.ended, k.lost, k.cause = why, true, cause
	leases := make([]*Lease, 0, len(k.leases))
	for l := range k.leases {
		leases = append(leases, l)
	}
	clear(k.leases)
	k.mu.Unlock()

	k.c.keepAlive.remove(k)
	k.c.forgetSession(k)
	cleaned := k.cleaned
	go func() {
		defer close(cleaned)
		switch {
		case why == LostNotFound, why == LostPreempted:
		case why == LostDeadline && k.lockDelay:
		case k.session:
			k.c.closeSession(k.id)
		case len(leases) == 1:
			k.c.release(leases[0].token)
		}
	}()
	if k.session {
		k.c.emit(Event{Type: EventSessionEnded, SessionID: k.id, Why: why, Leases: len(leases)})
	}
	for _, l := range leases {
		l.finish(why, cause, cleaned)
	}
}

// loss says why the keeper was lost, if it was: what each lease on it ends with. A lease that looks at
// it while lose is still ending the others ends itself with the same, so that no look finds a lease held
// once its keeper is lost.
func (k *keeper) loss() (why LossCause, cause error, lost bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ended, k.cause, k.lost
}

// leaseEnded: l ended on its own (released, fenced, canceled). A lease of its own ends its keeper; on a
// session only that acquisition ends. Its cleanup on the server is the Release of its token.
func (k *keeper) leaseEnded(l *Lease, why LossCause) {
	k.mu.Lock()
	delete(k.leases, l)
	own := !k.session && k.ended == ""
	if own {
		k.ended = why
	}
	k.mu.Unlock()
	if own {
		k.c.keepAlive.remove(k)
	}
}

// openSession opens a session of ttl and starts renewing it.
func (c *Client) openSession(ctx context.Context, ttl time.Duration) (*keeper, error) {
	sentAt := time.Now()
	var res *fencekeeperv1.OpenSessionResponse
	err := c.call(ctx, false, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.lease.OpenSession(ctx, &fencekeeperv1.OpenSessionRequest{Ttl: durationpb.New(ttl), Holder: c.holder})
		return err
	})
	if err != nil {
		return nil, err
	}
	k := newKeeper(c, res.GetSessionId(), res.GetTtl().AsDuration(), true, sentAt, time.Now())
	validUntil, _ := k.state()
	c.emit(Event{Type: EventSessionOpened, SessionID: k.id, TTL: k.ttl, ValidUntil: validUntil})
	k.start(sentAt)
	return k, nil
}

// closeSession closes a session on the server; it never fails: gone already, or no server answers, the
// session ends at its TTL with its renewals stopped.
func (c *Client) closeSession(id int64) {
	c.cleanups <- struct{}{}
	defer func() { <-c.cleanups }()
	_ = c.call(context.Background(), true, func(ctx context.Context, cn *conn) error {
		_, err := cn.lease.CloseSession(ctx, &fencekeeperv1.CloseSessionRequest{SessionId: id})
		return err
	})
}
