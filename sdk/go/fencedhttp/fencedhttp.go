// Package fencedhttp is the fenced endpoint of docs/fenced-http.md in Go: a service that owns its state
// and takes writes over HTTP or gRPC refuses a write whose fencing token is stale. The caller sends its
// token in the Fencing-Token header (HeaderValue: base64 of the token's protobuf); the endpoint verifies
// the signature offline with the server's keys (KeyCache), checks that the token is for the resource
// being written, and asks the service's own FenceStore to admit the generation: 409 (HTTP) or
// FAILED_PRECONDITION with ErrorInfo STALE_TOKEN (gRPC) when a newer generation has been admitted.
// A resource's admitted requests run one at a time in this process, from admit until the handler
// returns, unless Endpoint.Serialize is off (docs/fenced-http.md, "The race between admit and the write").
package fencedhttp

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Header carries the token; gRPC metadata has it in lower case, "fencing-token".
const Header = "Fencing-Token"

const maxHeaderLength = 8192

// HeaderValue is the Fencing-Token header for a token: base64 of its protobuf, signature and mode included.
func HeaderValue(t fencekeeper.Token) string {
	p := &fencekeeperv1.FencingToken{Resource: t.Resource, Generation: t.Generation, LeaseId: t.LeaseID, Principal: t.Principal, KeyId: t.KeyID, Signature: t.Signature}
	if t.Shared {
		p.Mode = fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED
	}
	b, _ := proto.Marshal(p)
	return base64.StdEncoding.EncodeToString(b)
}

// ParseHeader decodes a Fencing-Token header (base64 or base64url).
func ParseHeader(v string) (fencekeeper.Token, error) {
	v = strings.TrimSpace(v)
	if len(v) > maxHeaderLength {
		return fencekeeper.Token{}, fmt.Errorf("the %s header is %d characters, more than any token", Header, len(v))
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "=")); err != nil {
			return fencekeeper.Token{}, fmt.Errorf("the %s header is not base64: send fencedhttp.HeaderValue(lease.Token())", Header)
		}
	}
	var p fencekeeperv1.FencingToken
	if err := proto.Unmarshal(raw, &p); err != nil {
		return fencekeeper.Token{}, fmt.Errorf("the %s header is base64 but not a FencingToken protobuf: %v", Header, err)
	}
	switch {
	case p.GetResource() == "":
		return fencekeeper.Token{}, fmt.Errorf("the %s header's token names no resource", Header)
	case p.GetGeneration() <= 0:
		return fencekeeper.Token{}, fmt.Errorf("the %s header's token has generation %d; generations are positive", Header, p.GetGeneration())
	case p.GetMode() < 0 || p.GetMode() > fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED:
		return fencekeeper.Token{}, fmt.Errorf("the %s header's token has mode %d, which is not an AcquireMode", Header, p.GetMode())
	}
	return fencekeeper.Token{Resource: p.GetResource(), Generation: p.GetGeneration(), LeaseID: p.GetLeaseId(), Principal: p.GetPrincipal(), KeyID: p.GetKeyId(),
		Signature: p.GetSignature(), Shared: p.GetMode() == fencekeeperv1.AcquireMode_ACQUIRE_MODE_SHARED}, nil
}

// Verdict is a FenceStore's answer: Admitted, and the resource's fence (the generation admitted, or
// the newer one in force when refused).
type Verdict struct {
	Admitted bool
	Fence    int64
}

// FenceStore keeps the service's fence per resource. Admit must, atomically for one resource, refuse a
// generation below the fence and otherwise raise the fence to it; a resource never seen admits any.
type FenceStore interface {
	Admit(ctx context.Context, resource string, generation int64) (Verdict, error)
}

// MemoryStore is a FenceStore in this process's memory: for tests and single-process services only.
// Its fences are lost on restart, and two processes each keep their own.
type MemoryStore struct {
	mu     sync.Mutex
	fences map[string]int64
	admits int
}

// AdmitCount is how many times Admit was called.
func (m *MemoryStore) AdmitCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.admits
}

func (m *MemoryStore) Admit(_ context.Context, resource string, generation int64) (Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.admits++
	if m.fences == nil {
		m.fences = map[string]int64{}
	}
	if fence, ok := m.fences[resource]; ok && fence > generation {
		return Verdict{Admitted: false, Fence: fence}, nil
	}
	m.fences[resource] = generation
	return Verdict{Admitted: true, Fence: generation}, nil
}

// KeyCache holds the server's token keys: fetched on first use and again when a token names a key id
// not among them, at most once per MinRefresh however many do, so that a flood of forged key ids costs
// the server one ListTokenKeys a period.
type KeyCache struct {
	fetch      func(context.Context) (map[string]ed25519.PublicKey, error)
	minRefresh time.Duration

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey
	lastFetch time.Time
	lastErr   error
	fetches   int
}

// NewKeyCache takes the fetch, usually client.TokenKeys, and the least time between two fetches (10s when 0).
func NewKeyCache(fetch func(context.Context) (map[string]ed25519.PublicKey, error), minRefresh time.Duration) *KeyCache {
	if minRefresh <= 0 {
		minRefresh = 10 * time.Second
	}
	return &KeyCache{fetch: fetch, minRefresh: minRefresh}
}

// Fetches is how many times the keys were fetched.
func (k *KeyCache) Fetches() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

var errKeysUnavailable = errors.New("token keys unavailable")

// Verify checks the token's signature: nil, one of fencekeeper's ErrNotSigned, ErrUnknownKeyID,
// ErrBadSignature, or an error wrapping errKeysUnavailable when the keys are needed and cannot be had.
func (k *KeyCache) Verify(ctx context.Context, t fencekeeper.Token) error {
	keys, _ := k.get(ctx, false)
	err := fencekeeper.VerifyToken(t, keys)
	if errors.Is(err, fencekeeper.ErrUnknownKeyID) {
		keys, fetchErr := k.get(ctx, true)
		if err = fencekeeper.VerifyToken(t, keys); errors.Is(err, fencekeeper.ErrUnknownKeyID) && fetchErr != nil {
			return fmt.Errorf("%w: key id %q unknown and the keys could not be fetched: %v", errKeysUnavailable, t.KeyID, fetchErr)
		}
	}
	return err
}

// get answers the keys, fetched first if never fetched, or if stale is set and the last fetch is
// older than minRefresh. The lock is held across a fetch: concurrent callers wait for it and then
// find it fresh. The error is the last fetch's.
func (k *KeyCache) get(ctx context.Context, stale bool) (map[string]ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lastFetch.IsZero() || (stale && time.Since(k.lastFetch) >= k.minRefresh) {
		k.refresh(ctx)
	}
	return k.keys, k.lastErr
}

func (k *KeyCache) refresh(ctx context.Context) {
	k.lastFetch = time.Now() // before the call: a failing fetch also waits its turn
	k.fetches++
	keys, err := k.fetch(ctx)
	k.lastErr = err
	if err == nil {
		k.keys = keys
	}
}

// Refusal is why a write was refused: its HTTP status, gRPC code, ErrorReason name where one fits
// (STALE_TOKEN, TOKEN_SIGNATURE_INVALID, SHARED_TOKEN), and words for a person.
type Refusal struct {
	HTTPStatus int
	Code       codes.Code
	Reason     string
	Message    string
	Resource   string
	Generation int64
	// Fence is the generation in force, on a stale refusal.
	Fence int64
}

func (r *Refusal) Error() string { return r.Message }

// GRPCStatus is the refusal as the fencekeeper server would send it: the code and an ErrorInfo.
func (r *Refusal) GRPCStatus() *status.Status {
	st := status.New(r.Code, r.Message)
	if r.Reason == "" {
		return st
	}
	md := map[string]string{"resource": r.Resource, "generation": strconv.FormatInt(r.Generation, 10)}
	if r.Fence != 0 {
		md["fence"] = strconv.FormatInt(r.Fence, 10)
	}
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: r.Reason, Domain: "fencekeeper.io", Metadata: md}); err == nil {
		return d
	}
	return st
}

// Endpoint is the check. Make it with New.
type Endpoint struct {
	Keys  *KeyCache
	Store FenceStore
	// Serialize runs a resource's admitted requests one at a time in this process (New sets it). Off
	// only when the handler's write checks the fence itself, in the same transaction.
	Serialize bool

	mu    sync.Mutex
	turns map[string]*turn
}

type turn struct {
	sync.Mutex
	users int
}

func New(keys *KeyCache, store FenceStore) *Endpoint {
	return &Endpoint{Keys: keys, Store: store, Serialize: true}
}

// Admit is the whole check of a write to resource whose Fencing-Token header is header ("" when
// absent). On success it returns the token and done, to call when the write is over.
func (e *Endpoint) Admit(ctx context.Context, header, resource string) (fencekeeper.Token, func(), *Refusal) {
	if header == "" {
		return fencekeeper.Token{}, nil, &Refusal{HTTPStatus: 400, Code: codes.InvalidArgument, Resource: resource,
			Message: fmt.Sprintf("a write to %q needs its fencing token in the %s header (fencedhttp.HeaderValue(lease.Token()))", resource, Header)}
	}
	t, err := ParseHeader(header)
	if err != nil {
		return t, nil, &Refusal{HTTPStatus: 400, Code: codes.InvalidArgument, Resource: resource, Message: err.Error()}
	}
	refuse := func(http int, code codes.Code, reason, msg string) (fencekeeper.Token, func(), *Refusal) {
		return t, nil, &Refusal{HTTPStatus: http, Code: code, Reason: reason, Message: msg, Resource: t.Resource, Generation: t.Generation}
	}
	// The signature first: a token fencekeeper did not issue never reaches the store.
	if err := e.Keys.Verify(ctx, t); err != nil {
		if errors.Is(err, errKeysUnavailable) {
			return refuse(503, codes.Unavailable, "", fmt.Sprintf("cannot check the token's signature now: %v; try again", err))
		}
		return refuse(403, codes.PermissionDenied, "TOKEN_SIGNATURE_INVALID", fmt.Sprintf("the fencing token's signature does not verify (%v): send the token exactly as Acquire returned it", err))
	}
	if t.Resource != resource {
		return refuse(403, codes.PermissionDenied, "", fmt.Sprintf("the fencing token is for %q, and this request writes %q: a resource's generations say nothing about another's", t.Resource, resource))
	}
	if t.Shared {
		return refuse(403, codes.PermissionDenied, "SHARED_TOKEN", fmt.Sprintf("a shared token (generation %d of %q) cannot write: writes need an exclusive acquisition's token", t.Generation, resource))
	}
	leave := func() {}
	if e.Serialize {
		leave = e.enter(resource)
	}
	v, err := e.Store.Admit(ctx, resource, t.Generation)
	if err != nil {
		leave()
		return refuse(503, codes.Unavailable, "", fmt.Sprintf("the fence store did not answer: %v; try again", err))
	}
	if !v.Admitted {
		leave()
		t2, _, r := refuse(409, codes.FailedPrecondition, "STALE_TOKEN", fmt.Sprintf("stale fencing token: generation %d of %q has written since generation %d; this holder has lost its lease and must stop", v.Fence, resource, t.Generation))
		r.Fence = v.Fence
		return t2, nil, r
	}
	var once sync.Once
	return t, func() { once.Do(leave) }, nil
}

func (e *Endpoint) enter(resource string) func() {
	e.mu.Lock()
	if e.turns == nil {
		e.turns = map[string]*turn{}
	}
	tr := e.turns[resource]
	if tr == nil {
		tr = &turn{}
		e.turns[resource] = tr
	}
	tr.users++
	e.mu.Unlock()
	tr.Lock()
	return func() {
		tr.Unlock()
		e.mu.Lock()
		if tr.users--; tr.users == 0 {
			delete(e.turns, resource)
		}
		e.mu.Unlock()
	}
}

type tokenKey struct{}

// TokenFrom is the admitted token, in a handler behind Middleware or UnaryInterceptor.
func TokenFrom(ctx context.Context) (fencekeeper.Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(fencekeeper.Token)
	return t, ok
}

// Middleware checks requests for which resourceOf names a resource (ok true); others pass unchecked.
// A refusal is answered here, as JSON: code, reason, message, resource, generation, fence.
func (e *Endpoint) Middleware(resourceOf func(*http.Request) (string, bool), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource, ok := resourceOf(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		values := r.Header.Values(Header)
		header := strings.Join(values, ", ") // two headers are one too many: joined, they do not parse
		t, done, refusal := e.Admit(r.Context(), header, resource)
		if refusal != nil {
			writeRefusal(w, refusal)
			return
		}
		defer done()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, t)))
	})
}

func writeRefusal(w http.ResponseWriter, r *Refusal) {
	body := map[string]string{"code": codeName(r.Code), "message": r.Message}
	if r.Reason != "" {
		body["reason"] = r.Reason
	}
	if r.Resource != "" {
		body["resource"] = r.Resource
	}
	if r.Generation != 0 {
		body["generation"] = strconv.FormatInt(r.Generation, 10)
	}
	if r.Fence != 0 {
		body["fence"] = strconv.FormatInt(r.Fence, 10)
	}
	w.Header().Set("Content-Type", "application/json")
	if r.HTTPStatus == 503 {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(r.HTTPStatus)
	_ = json.NewEncoder(w).Encode(body)
}

// codeName is the code as connect and the TypeScript endpoint spell it ("FailedPrecondition").
func codeName(c codes.Code) string {
	switch c {
	case codes.InvalidArgument:
		return "InvalidArgument"
	case codes.PermissionDenied:
		return "PermissionDenied"
	case codes.FailedPrecondition:
		return "FailedPrecondition"
	case codes.Unavailable:
		return "Unavailable"
	}
	return c.String()
}

// UnaryInterceptor checks calls for which resourceOf names a resource (ok true); others pass unchecked.
// A refusal is the call's error (Refusal.GRPCStatus); the resource's turn ends when the handler returns.
func (e *Endpoint) UnaryInterceptor(resourceOf func(ctx context.Context, fullMethod string, req any) (string, bool)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resource, ok := resourceOf(ctx, info.FullMethod, req)
		if !ok {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		t, done, refusal := e.Admit(ctx, strings.Join(md.Get(strings.ToLower(Header)), ", "), resource)
		if refusal != nil {
			return nil, refusal.GRPCStatus().Err()
		}
		defer done()
		return handler(context.WithValue(ctx, tokenKey{}, t), req)
	}
}
