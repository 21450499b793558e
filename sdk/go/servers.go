package fencekeeper

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Credentials are how the client proves who it is to a server with authentication on
// (docs/authentication.md): a bearer JWT, a client certificate (mutual TLS), both or neither.
type Credentials struct {
	// Bearer is sent as "authorization: Bearer <JWT>" with every call, streams included. It is sent
	// over cleartext too (for a loopback test server); anywhere else use https:// servers.
	Bearer string
	// TLS configures https:// servers: RootCAs to trust (nil: the system's) and Certificates to
	// present for mutual TLS. Nil: the system's roots, no client certificate.
	TLS *tls.Config
}

type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerToken) RequireTransportSecurity() bool { return false }

// conn is one gRPC connection to one server, with a stub of each service.
type conn struct {
	url   string
	cc    *grpc.ClientConn
	lease fencekeeperv1.LeaseServiceClient
	store fencekeeperv1.FencedStoreServiceClient
}

// channel says which of a server's two connections: one for calls and one for the KeepAlive stream,
// so that dropping a hung stream's connection leaves the calls on the other be.
type channel string

const (
	callsChannel  channel = "calls"
	streamChannel channel = "stream"
)

// servers are the replicas of one service that a client may talk to, any of which serves any call. A
// server that cannot be reached makes the next one current.
type servers struct {
	urls    []string
	options map[string][]grpc.DialOption

	mu    sync.Mutex
	index int
	open  map[string]*conn
}

func newServers(urls []string, creds Credentials, extra []grpc.DialOption) (*servers, error) {
	if len(urls) == 0 {
		return nil, errors.New("fencekeeper: at least one server URL is needed")
	}
	s := &servers{options: map[string][]grpc.DialOption{}, open: map[string]*conn{}}
	for _, url := range urls {
		url = strings.TrimSuffix(strings.TrimSpace(url), "/")
		var transport credentials.TransportCredentials
		if _, ok := strings.CutPrefix(url, "https://"); ok {
			config := &tls.Config{MinVersion: tls.VersionTLS12}
			if creds.TLS != nil {
				config = creds.TLS.Clone()
			}
			transport = credentials.NewTLS(config)
		} else if _, ok := strings.CutPrefix(url, "http://"); ok {
			transport = insecure.NewCredentials()
		} else {
			return nil, fmt.Errorf("fencekeeper: a server URL looks like http://127.0.0.1:50051, got %q", url)
		}
		options := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
		if creds.Bearer != "" {
			options = append(options, grpc.WithPerRPCCredentials(bearerToken(creds.Bearer)))
		}
		s.urls = append(s.urls, url)
		s.options[url] = append(options, extra...)
	}
	return s, nil
}

func (s *servers) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.urls[s.index]
}

// failed moves on to the next server, if url is still the current one.
func (s *servers) failed(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.urls[s.index] == url {
		s.index = (s.index + 1) % len(s.urls)
	}
}

// connection is the channel's connection to url ("" for the current server), dialed on first use.
// grpc.NewClient connects lazily and never blocks.
func (s *servers) connection(ch channel, url string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if url == "" {
		url = s.urls[s.index]
	}
	id := string(ch) + " " + url
	if c := s.open[id]; c != nil {
		return c, nil
	}
	target := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	cc, err := grpc.NewClient(target, s.options[url]...)
	if err != nil {
		return nil, err
	}
	c := &conn{url: url, cc: cc, lease: fencekeeperv1.NewLeaseServiceClient(cc), store: fencekeeperv1.NewFencedStoreServiceClient(cc)}
	s.open[id] = c
	return c, nil
}

// reset drops a connection: its calls fail, and the next use of that channel dials a fresh one (a hung
// connection may be a dead one).
func (s *servers) reset(ch channel, url string) {
	s.mu.Lock()
	id := string(ch) + " " + url
	c := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	if c != nil {
		c.cc.Close()
	}
}

func (s *servers) close() {
	s.mu.Lock()
	open := s.open
	s.open = map[string]*conn{}
	s.mu.Unlock()
	for _, c := range open {
		c.cc.Close()
	}
}

// run makes one call on the current server and returns its typed error. A server that cannot be reached
// (UNAVAILABLE with no ErrorInfo: the transport's verdict, not etcd's) makes the next one current; the
// call is then tried on each other server once if it is safe to repeat, or if it never left (the
// connection was refused, so the server cannot have seen it).
func (s *servers) run(repeatable bool, call func(c *conn) error) error {
	for tries := 1; ; tries++ {
		c, err := s.connection(callsChannel, "")
		if err != nil {
			return err
		}
		err = call(c)
		if !unreachable(err) {
			return toError(err)
		}
		s.failed(c.url)
		if !(repeatable || refused(err)) || tries >= len(s.urls) {
			st, _ := status.FromError(err)
			return &UnavailableError{&StatusError{Code: codes.Unavailable, Message: fmt.Sprintf("no answer from the server at %s: %s", c.url, st.Message()), Metadata: map[string]string{}, Err: err}}
		}
	}
}

func unreachable(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return false
	}
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.ErrorInfo); ok {
			return false
		}
	}
	return true
}

// refused says whether the call failed because the connection was refused: grpc-go reports it in the
// status message only.
func refused(err error) bool {
	return strings.Contains(err.Error(), "connection refused")
}
