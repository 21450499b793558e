package main

// Offline verification of a fencing token's signature (docs/verifying-tokens.md): whoever holds the
// server's public keys (LeaseService.ListTokenKeys) can check, without asking the server, that
// fencekeeper issued exactly this generation of this resource to this principal. VerifyToken and
// canonicalToken need only the standard library and the generated FencingToken: copy them as they are.

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"strconv"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
)

// Why a token does not verify.
var (
	ErrNotSigned    = errors.New("not signed")     // no signature: the server runs without keys, or it was stripped
	ErrUnknownKeyID = errors.New("unknown key id") // fetch the keys again (ListTokenKeys); still unknown: not ours
	ErrBadSignature = errors.New("bad signature")  // altered, or signed by someone else
)

// VerifyToken checks token's Ed25519 signature with the key its key_id names among keys (key id →
// raw 32-byte public key). nil means fencekeeper issued this token, exactly as it is; it says nothing
// about whether the token is still the newest: compare its generation with your own fence for that.
func VerifyToken(token *fencekeeperv1.FencingToken, keys map[string]ed25519.PublicKey) error {
	if len(token.GetSignature()) == 0 {
		return ErrNotSigned
	}
	key, ok := keys[token.GetKeyId()]
	if !ok || len(key) != ed25519.PublicKeySize {
		return ErrUnknownKeyID
	}
	if !ed25519.Verify(key, canonicalToken(token), token.GetSignature()) {
		return ErrBadSignature
	}
	return nil
}

// canonicalToken is what the signature covers: for each field, its length in bytes (4 bytes, big
// endian) and its UTF-8 bytes, so that no field can run into the next; then, for a mode other than
// unset (0) and exclusive (1), the mode's number ("2": shared).
func canonicalToken(t *fencekeeperv1.FencingToken) []byte {
	fields := []string{
		"fencekeeper-token-v1",
		t.GetResource(),
		strconv.FormatInt(t.GetGeneration(), 10),
		strconv.FormatInt(t.GetLeaseId(), 10),
		t.GetPrincipal(),
		t.GetKeyId(),
	}
	if mode := int32(t.GetMode()); mode != 0 && mode != 1 {
		fields = append(fields, strconv.FormatInt(int64(mode), 10))
	}
	var out []byte
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}
