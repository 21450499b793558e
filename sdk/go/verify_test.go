package fencekeeper

import (
	"crypto/ed25519"
	"errors"
	"testing"
)

// A shared token's mode is signed: it verifies with Shared set, and not as an exclusive token.
func TestSharedTokenVerifiesOnlyAsShared(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]ed25519.PublicKey{"k1": pub}
	for _, shared := range []bool{false, true} {
		token := Token{Resource: "orders", Generation: 42, LeaseID: 7, Principal: "alice", KeyID: "k1", Shared: shared}
		token.Signature = ed25519.Sign(priv, canonicalToken(token))
		if err := VerifyToken(token, keys); err != nil {
			t.Fatalf("shared=%v: %v", shared, err)
		}
		flipped := token
		flipped.Shared = !shared
		if err := VerifyToken(flipped, keys); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("shared=%v flipped: want ErrBadSignature, got %v", shared, err)
		}
		if back := tokenFromProto(token.proto()); back.Shared != shared {
			t.Fatalf("shared=%v: proto round trip lost the mode", shared)
		}
	}
}
