package fencekeeper

import "time"

// deadline is how long a lease may be assumed held: from the moment a renewal (or the Acquire) was
// SENT, plus the TTL etcd granted, minus a drift margin. An answer proves the lease was renewed at some
// point after it was sent, so counting from the send is safe however long the answer took; counting
// from its arrival is not. Once the deadline has passed nothing extends it.
//
// It is kept on both clocks: the monotonic one (a time.Time from time.Now carries it; it stops while the
// machine is suspended) and the wall clock (which does not), and it has passed when either says so.
// Not safe for concurrent use: the lease guards it.
type deadline struct {
	mono        time.Time // with a monotonic reading
	wall        time.Time // without one (Round(0)): compared on the wall clock
	confirmedAt time.Time
}

// DefaultDriftMargin is the drift margin unless Options.DriftMargin says otherwise: 100 ms + 1% of the TTL.
func DefaultDriftMargin(ttl time.Duration) time.Duration { return 100*time.Millisecond + ttl/100 }

func newDeadline(sentAt time.Time, valid time.Duration, answeredAt time.Time) deadline {
	return deadline{mono: sentAt.Add(valid), wall: sentAt.Round(0).Add(valid), confirmedAt: answeredAt}
}

// confirm takes in a renewal sent at sentAt and answered at `at`, valid for `valid` (TTL - drift) from
// its send. It returns false, and changes nothing, if the deadline had passed when the answer came.
func (d *deadline) confirm(sentAt time.Time, valid time.Duration, at time.Time) bool {
	if d.passedAt(at) {
		return false
	}
	if mono := sentAt.Add(valid); mono.After(d.mono) {
		d.mono = mono
	}
	if wall := sentAt.Round(0).Add(valid); wall.After(d.wall) {
		d.wall = wall
	}
	d.confirmedAt = at
	return true
}

// passedAt says whether the deadline has passed at `now` (a time.Now reading), by either clock.
func (d *deadline) passedAt(now time.Time) bool {
	return !now.Before(d.mono) || !now.Round(0).Before(d.wall)
}

// left is the time left, by the clock that leaves the least; 0 or less once passed.
func (d *deadline) left(now time.Time) time.Duration {
	return min(d.mono.Sub(now), d.wall.Sub(now.Round(0)))
}

// validUntil is the deadline as a wall-clock time.
func (d *deadline) validUntil() time.Time {
	now := time.Now()
	return now.Round(0).Add(d.left(now))
}
