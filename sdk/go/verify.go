package fencekeeper

// Offline verification of a token's signature (docs/verifying-tokens.md): a resource outside
// fencekeeper that holds the server's public keys (Client.TokenKeys) checks, without asking the server,
// that fencekeeper issued exactly this generation of this resource to this principal.

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"strconv"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
)

// Why a token does not verify.
var (
	ErrNotSigned    = errors.New("fencekeeper: token not signed")     // no signature: stripped, or a server from before signatures
	ErrUnknownKeyID = errors.New("fencekeeper: token key id unknown") // fetch the keys again (TokenKeys); still unknown: not ours
	ErrBadSignature = errors.New("fencekeeper: token signature bad")  // altered, or signed by someone else
)

// TokenKeys are the server's public keys that verify tokens (by key id), the signing one among them.
func (c *Client) TokenKeys(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	var res *fencekeeperv1.ListTokenKeysResponse
	err := c.call(ctx, true, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.lease.ListTokenKeys(ctx, &fencekeeperv1.ListTokenKeysRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range res.GetKeys() {
		if k.GetAlgorithm() == "" || k.GetAlgorithm() == "Ed25519" {
			keys[k.GetKeyId()] = ed25519.PublicKey(k.GetPublicKey())
		}
	}
	return keys, nil
}

// VerifyToken checks token's Ed25519 signature with the key its KeyID names among keys. nil means
// fencekeeper issued this token exactly as it is; it says nothing about whether the token is still the
// newest: compare its generation with your own fence for that.
func VerifyToken(token Token, keys map[string]ed25519.PublicKey) error {
	if len(token.Signature) == 0 {
		return ErrNotSigned
	}
	key, ok := keys[token.KeyID]
	if !ok || len(key) != ed25519.PublicKeySize {
		return ErrUnknownKeyID
	}
	if !ed25519.Verify(key, canonicalToken(token), token.Signature) {
		return ErrBadSignature
	}
	return nil
}

// canonicalToken is what the signature covers: for each field, its length in bytes (4 bytes, big
// endian) and its UTF-8 bytes, so that no field can run into the next. A shared token has one field
// more, its mode's number ("2"), so that it never verifies as an exclusive one.
func canonicalToken(t Token) []byte {
	var out []byte
	fields := []string{"fencekeeper-token-v1", t.Resource, strconv.FormatInt(t.Generation, 10), strconv.FormatInt(t.LeaseID, 10), t.Principal, t.KeyID}
	if t.Shared {
		fields = append(fields, "2")
	}
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}
