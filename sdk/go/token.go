package fencekeeper

import (
	"fmt"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
)

// Token is a fencing token as Acquire returned it. Send it back whole: with authentication on, the
// server takes only tokens whose signature verifies.
type Token struct {
	Resource string
	// Generation orders the holders of a resource: each acquisition gets a greater one.
	Generation int64
	// LeaseID is the etcd lease that keeps the acquisition alive.
	LeaseID   int64
	Principal string
	KeyID     string
	Signature []byte
	// Shared is true on a shared acquisition's token (AcquireMode SHARED): the fenced store refuses its
	// writes. Signed: a shared token verifies only with it set.
	Shared bool
}

func (t Token) String() string { return fmt.Sprintf("%s:%d:%d", t.Resource, t.Generation, t.LeaseID) }

func tokenFromProto(t *fencekeeperv1.FencingToken) Token {
	return Token{Resource: t.GetResource(), Generation: t.GetGeneration(), LeaseID: t.GetLeaseId(), Principal: t.GetPrincipal(), KeyID: t.GetKeyId(), Signature: t.GetSignature(),
		Shared: t.GetMode() == fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED}
}

func (t Token) proto() *fencekeeperv1.FencingToken {
	p := &fencekeeperv1.FencingToken{Resource: t.Resource, Generation: t.Generation, LeaseId: t.LeaseID, Principal: t.Principal, KeyId: t.KeyID, Signature: t.Signature}
	if t.Shared {
		p.Mode = fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED
	}
	return p
}
