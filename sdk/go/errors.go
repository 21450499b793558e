package fencekeeper

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StatusError is what every failed call returns, alone or inside one of the typed errors below: the
// gRPC code, the google.rpc.ErrorInfo reason (proto/fencekeeper/v1/errors.proto; empty when the server
// gave none) and its metadata. errors.As(err, &se) finds it inside any typed error.
type StatusError struct {
	Code     codes.Code
	Reason   string
	Metadata map[string]string
	Message  string
	// Err is what the transport returned, if anything.
	Err error
}

func (e *StatusError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("fencekeeper: %s (%s %s)", e.Message, e.Code, e.Reason)
	}
	return fmt.Sprintf("fencekeeper: %s (%s)", e.Message, e.Code)
}

func (e *StatusError) Unwrap() error { return e.Err }

// GRPCStatus lets status.Code(err) and status.FromError(err) see the code.
func (e *StatusError) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

func (e *StatusError) int64(key string) int64 {
	n, _ := strconv.ParseInt(e.Metadata[key], 10, 64)
	return n
}

// StaleTokenError (STALE_TOKEN): a newer generation has written to the resource. The holder has lost
// its lease: stop, do not retry with this token.
type StaleTokenError struct {
	*StatusError
	Resource string
	// Fence is the resource's fence: the newer generation that has written.
	Fence int64
	// Generation is the refused one.
	Generation int64
}

func (e *StaleTokenError) Unwrap() error { return e.StatusError }

// LeaseNotHeldError (LEASE_NOT_HELD, FENCE_MODE_LIVE): the token's lease is no longer held in etcd.
type LeaseNotHeldError struct {
	*StatusError
	Resource   string
	Generation int64
	LeaseID    int64
}

func (e *LeaseNotHeldError) Unwrap() error { return e.StatusError }

// GenerationNotIssuedError (GENERATION_NOT_ISSUED): the token names a generation never issued.
type GenerationNotIssuedError struct {
	*StatusError
	Generation int64
	LastIssued int64
}

func (e *GenerationNotIssuedError) Unwrap() error { return e.StatusError }

// ResourceHeldError (RESOURCE_HELD): Acquire without waiting found the resource held.
type ResourceHeldError struct {
	*StatusError
	// Holder is the current holder's label.
	Holder string
	// HolderToken is the current holder's token, when the server sent it.
	HolderToken *Token
}

func (e *ResourceHeldError) Unwrap() error { return e.StatusError }

// LockDelayError (LOCK_DELAY): Acquire without waiting found the resource in a lock-delay
// (AcquireOptions.LockDelay, docs/lock-delay.md): its last holder's lease expired, and nobody is granted
// it before Until. It embeds the *ResourceHeldError (with no holder), so code that branches on that
// one still does.
type LockDelayError struct {
	*ResourceHeldError
	// Until is about when the delay ends (the server's estimate, within about a second); zero if not sent.
	Until time.Time
	// Generation is the one whose lease expired.
	Generation int64
}

func (e *LockDelayError) Unwrap() error { return e.ResourceHeldError }

// LeaseNotFoundError (LEASE_NOT_FOUND): the lease expired, was released, or never existed.
type LeaseNotFoundError struct {
	*StatusError
	LeaseID int64
}

func (e *LeaseNotFoundError) Unwrap() error { return e.StatusError }

// PreemptedError (PREEMPTED): a renewal answered that another acquisition preempted the lease's holding
// (AcquireOptions.Preempt, docs/preemption.md): its writes are refused since, and it is renewed no more.
// The Cause of the LeaseLostError of a lease lost this way (LostPreempted).
type PreemptedError struct {
	*StatusError
	Resource string
	// Generation is the preempted one; ByGeneration the preemptor's (0 if the answer came while it was being granted).
	Generation, ByGeneration int64
	// ByPrincipal is the preemptor's principal; empty without authentication.
	ByPrincipal string
}

func (e *PreemptedError) Unwrap() error { return e.StatusError }

// IdempotencyKeyReusedError (IDEMPOTENCY_KEY_REUSED): the key was used before with another request.
type IdempotencyKeyReusedError struct {
	*StatusError
	IdempotencyKey string
}

func (e *IdempotencyKeyReusedError) Unwrap() error { return e.StatusError }

// UnavailableError: no server answered, or etcd did not (ETCD_UNAVAILABLE). Retryable; a mutation may
// or may not have applied (retry it with the same idempotency key).
type UnavailableError struct{ *StatusError }

func (e *UnavailableError) Unwrap() error { return e.StatusError }

// TimeoutError (DEADLINE_EXCEEDED): e.g. an Acquire that waited until its wait limit.
type TimeoutError struct{ *StatusError }

func (e *TimeoutError) Unwrap() error { return e.StatusError }

// InvalidArgumentError (INVALID_ARGUMENT): a malformed name, key, TTL or token.
type InvalidArgumentError struct{ *StatusError }

func (e *InvalidArgumentError) Unwrap() error { return e.StatusError }

// CanceledError (CANCELED): the caller's context ended the call.
type CanceledError struct{ *StatusError }

func (e *CanceledError) Unwrap() error { return e.StatusError }

// UnauthenticatedError (UNAUTHENTICATED): the server wants credentials and got none, or bad ones.
type UnauthenticatedError struct{ *StatusError }

func (e *UnauthenticatedError) Unwrap() error { return e.StatusError }

// PermissionDeniedError (PERMISSION_DENIED): the policy does not grant this (reason PERMISSION_DENIED),
// or the lease or token is another principal's (reason NOT_HOLDER).
type PermissionDeniedError struct{ *StatusError }

func (e *PermissionDeniedError) Unwrap() error { return e.StatusError }

// Why a lease ended, as LeaseLostError.Why says.
type LossCause string

const (
	// LostDeadline: no renewal was confirmed before ValidUntil; a failed, refused or late renewal proves nothing.
	LostDeadline LossCause = "deadline"
	// LostNotFound: the server answered that the lease is gone (LEASE_NOT_FOUND).
	LostNotFound LossCause = "not-found"
	// LostPreempted: another acquisition preempted it (the Cause is a *PreemptedError).
	LostPreempted LossCause = "preempted"
	// LostFenced: a write under the lease's token was refused (STALE_TOKEN or LEASE_NOT_HELD).
	LostFenced LossCause = "fenced"
	// LostReleased: this program released it (Release, or Client.Close).
	LostReleased LossCause = "released"
	// LostCanceled: AcquireOptions.LeaseContext (or WithLease's context) ended.
	LostCanceled LossCause = "canceled"
)

// LeaseLostError is the client's verdict that a lease can no longer be assumed held: the cause of the
// lease's Context, what Err and Check return, and what every call through the lease returns from then
// on. Do not retry with this token; acquire again for a new one.
type LeaseLostError struct {
	Why   LossCause
	Token Token
	// ValidUntil is the deadline the lease had when it ended.
	ValidUntil time.Time
	// LastConfirmedAt is when the last renewal's answer (or the Acquire's) arrived.
	LastConfirmedAt time.Time
	// LostAt is when the client decided the lease was lost.
	LostAt time.Time
	// Cause is what made it so, if anything: the refused write's error, the LeaseNotFoundError of a
	// renewal, the cause of AcquireOptions.LeaseContext.
	Cause error
}

func (e *LeaseLostError) Error() string {
	lease := fmt.Sprintf("fencekeeper: the lease on %q (generation %d)", e.Token.Resource, e.Token.Generation)
	switch e.Why {
	case LostDeadline:
		return fmt.Sprintf("%s is lost: no renewal was confirmed before its deadline %s", lease, e.ValidUntil.UTC().Format(time.RFC3339Nano))
	case LostNotFound:
		return lease + " is lost: the server says it expired or was released"
	case LostPreempted:
		var p *PreemptedError
		if errors.As(e.Cause, &p) && p.ByPrincipal != "" {
			return fmt.Sprintf("%s is lost: it was preempted by %q (now generation %d); its writes are refused", lease, p.ByPrincipal, p.ByGeneration)
		} else if p != nil {
			return fmt.Sprintf("%s is lost: it was preempted (now generation %d); its writes are refused", lease, p.ByGeneration)
		}
		return lease + " is lost: it was preempted; its writes are refused"
	case LostFenced:
		return fmt.Sprintf("%s is lost: a write under its token was refused (%v)", lease, e.Cause)
	case LostReleased:
		return lease + " was released"
	default:
		return lease + " ended: the context its lease was tied to (AcquireOptions.LeaseContext) ended"
	}
}

func (e *LeaseLostError) Unwrap() error { return e.Cause }

// toError turns what a call returned into the typed error to branch on.
func toError(err error) error {
	if err == nil {
		return nil
	}
	var known *StatusError
	if errors.As(err, &known) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return statusError(st, err)
}

// FromStatus is the typed error of a gRPC status, as the client's calls return it: for a program that
// also calls the generated stubs (gen/go) itself.
func FromStatus(st *status.Status) error {
	if st == nil || st.Code() == codes.OK {
		return nil
	}
	return statusError(st, st.Err())
}

// statusError maps a gRPC status (of a call, or inside a KeepAlive answer) to its typed error.
func statusError(st *status.Status, cause error) error {
	se := &StatusError{Code: st.Code(), Message: st.Message(), Metadata: map[string]string{}, Err: cause}
	var holder *Token
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			se.Reason = d.GetReason()
			for k, v := range d.GetMetadata() {
				se.Metadata[k] = v
			}
		case *fencekeeperv1.FencingToken:
			t := tokenFromProto(d)
			holder = &t
		}
	}
	if reason, ok := fencekeeperv1.ErrorReason_value[se.Reason]; ok && reason != 0 {
		if typed, ok := byReason[fencekeeperv1.ErrorReason(reason)]; ok {
			return typed(se, holder)
		}
	}
	switch se.Code {
	case codes.Unavailable:
		return &UnavailableError{se}
	case codes.DeadlineExceeded:
		return &TimeoutError{se}
	case codes.InvalidArgument:
		return &InvalidArgumentError{se}
	case codes.Canceled:
		return &CanceledError{se}
	case codes.Unauthenticated:
		return &UnauthenticatedError{se}
	case codes.PermissionDenied:
		return &PermissionDeniedError{se}
	}
	return se
}

// byReason is the typed error of each reason of the generated ErrorReason enum (gen/go, from
// proto/fencekeeper/v1/errors.proto). A reason added to the proto without an entry here fails the
// reasons test of test/sdk/go.test.ts (fk-sdk-probe reasons). NOT_FOUND without the reason
// LEASE_NOT_FOUND is no LeaseNotFoundError: only the server says a lease is gone, and it says why.
var byReason = map[fencekeeperv1.ErrorReason]func(se *StatusError, holder *Token) error{
	fencekeeperv1.ErrorReason_STALE_TOKEN: func(se *StatusError, _ *Token) error {
		return &StaleTokenError{StatusError: se, Resource: se.Metadata["resource"], Fence: se.int64("fence"), Generation: se.int64("generation")}
	},
	fencekeeperv1.ErrorReason_LEASE_NOT_HELD: func(se *StatusError, _ *Token) error {
		return &LeaseNotHeldError{StatusError: se, Resource: se.Metadata["resource"], Generation: se.int64("generation"), LeaseID: se.int64("lease_id")}
	},
	fencekeeperv1.ErrorReason_GENERATION_NOT_ISSUED: func(se *StatusError, _ *Token) error {
		return &GenerationNotIssuedError{StatusError: se, Generation: se.int64("generation"), LastIssued: se.int64("last_issued")}
	},
	fencekeeperv1.ErrorReason_RESOURCE_HELD: func(se *StatusError, holder *Token) error {
		return &ResourceHeldError{StatusError: se, Holder: se.Metadata["holder"], HolderToken: holder}
	},
	fencekeeperv1.ErrorReason_LEASE_NOT_FOUND: func(se *StatusError, _ *Token) error {
		return &LeaseNotFoundError{StatusError: se, LeaseID: se.int64("lease_id")}
	},
	fencekeeperv1.ErrorReason_IDEMPOTENCY_KEY_REUSED: func(se *StatusError, _ *Token) error {
		return &IdempotencyKeyReusedError{StatusError: se, IdempotencyKey: se.Metadata["idempotency_key"]}
	},
	fencekeeperv1.ErrorReason_ETCD_UNAVAILABLE: func(se *StatusError, _ *Token) error { return &UnavailableError{se} },
	// Answered to the client's own session acquisitions, which handle it.
	fencekeeperv1.ErrorReason_ALREADY_ACQUIRED:   plain,
	fencekeeperv1.ErrorReason_REVISION_COMPACTED: plain,
	fencekeeperv1.ErrorReason_UNAUTHENTICATED:    func(se *StatusError, _ *Token) error { return &UnauthenticatedError{se} },
	fencekeeperv1.ErrorReason_PERMISSION_DENIED:  func(se *StatusError, _ *Token) error { return &PermissionDeniedError{se} },
	fencekeeperv1.ErrorReason_NOT_HOLDER:         func(se *StatusError, _ *Token) error { return &PermissionDeniedError{se} },
	fencekeeperv1.ErrorReason_TOKEN_SIGNATURE_INVALID: func(se *StatusError, _ *Token) error {
		return &InvalidArgumentError{se}
	},
	fencekeeperv1.ErrorReason_LOCK_DELAY: func(se *StatusError, _ *Token) error {
		until, _ := time.Parse(time.RFC3339Nano, se.Metadata["lock_delay_until"])
		return &LockDelayError{ResourceHeldError: &ResourceHeldError{StatusError: se}, Until: until, Generation: se.int64("generation")}
	},
	fencekeeperv1.ErrorReason_SHARED_TOKEN:             func(se *StatusError, _ *Token) error { return &InvalidArgumentError{se} },
	fencekeeperv1.ErrorReason_QUOTA_EXCEEDED:           plain,
	fencekeeperv1.ErrorReason_ETCD_NO_SPACE:            plain,
	fencekeeperv1.ErrorReason_BATCH_TOO_LARGE:          func(se *StatusError, _ *Token) error { return &InvalidArgumentError{se} },
	fencekeeperv1.ErrorReason_MAX_HOLDERS_MISMATCH:     plain,
	fencekeeperv1.ErrorReason_LEASES_EXCEEDED:          plain,
	fencekeeperv1.ErrorReason_LEASE_BYTES_EXCEEDED:     plain,
	fencekeeperv1.ErrorReason_HISTORY_RATE_EXCEEDED:    plain,
	fencekeeperv1.ErrorReason_STREAMS_EXCEEDED:         plain,
	fencekeeperv1.ErrorReason_WAITERS_EXCEEDED:         plain,
	fencekeeperv1.ErrorReason_PREEMPTION_RATE_EXCEEDED: plain,
	fencekeeperv1.ErrorReason_PREEMPTED: func(se *StatusError, _ *Token) error {
		return &PreemptedError{StatusError: se, Resource: se.Metadata["resource"], Generation: se.int64("generation"), ByGeneration: se.int64("by_generation"), ByPrincipal: se.Metadata["by_principal"]}
	},
}

// plain: the reason is for a person, or for the client itself; the *StatusError carries it.
func plain(se *StatusError, _ *Token) error { return se }

// ErrorTypes names the error type the client returns for each reason of the generated ErrorReason enum,
// and "" for a reason it has no entry for: for tests and docs (docs/client-semantics.md).
func ErrorTypes() map[string]string {
	out := map[string]string{}
	for name, n := range fencekeeperv1.ErrorReason_value {
		if n == 0 {
			continue
		}
		typed, ok := byReason[fencekeeperv1.ErrorReason(n)]
		if !ok {
			out[name] = ""
			continue
		}
		out[name] = strings.TrimPrefix(fmt.Sprintf("%T", typed(&StatusError{Reason: name, Metadata: map[string]string{}}, nil)), "*fencekeeper.")
	}
	return out
}
