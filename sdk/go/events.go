package fencekeeper

import "time"

// EventType names what an Event reports.
type EventType string

const (
	EventAcquired      EventType = "acquired"       // Token, TTL, ValidUntil
	EventRenewed       EventType = "renewed"        // Token, SentAt, ConfirmedAt, TTL, ValidUntil
	EventRenewalFailed EventType = "renewal-failed" // Token, Err (UNAVAILABLE: proves nothing)
	EventLost          EventType = "lost"           // Token, Err (*LeaseLostError)
	EventReleased      EventType = "released"       // Token
	EventKeepAliveSent EventType = "keepalive-sent" // URL, Leases: one per KeepAliveRequest
	EventStreamOpened  EventType = "stream-opened"  // URL
	EventStreamFailed  EventType = "stream-failed"  // URL, Err, RetryIn

	// On sessions (the default; not with Options.OwnLeases):
	EventSessionOpened        EventType = "session-opened"         // SessionID, TTL, ValidUntil
	EventSessionRenewed       EventType = "session-renewed"        // SessionID, Leases, SentAt, ConfirmedAt, TTL, ValidUntil
	EventSessionRenewalFailed EventType = "session-renewal-failed" // SessionID, Err
	EventSessionEnded         EventType = "session-ended"          // SessionID, Why, Leases (how many went with it)
)

// Event is what Options.OnEvent is told; the fields its Type names are set.
type Event struct {
	Type        EventType
	At          time.Time
	Token       Token
	URL         string
	SentAt      time.Time
	ConfirmedAt time.Time
	ValidUntil  time.Time
	TTL         time.Duration
	Leases      int
	RetryIn     time.Duration
	SessionID   int64
	Why         LossCause
	Err         error
}
