package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// client is one connection to the server with a stub of each service.
type client struct {
	conn  *grpc.ClientConn
	lease fencekeeperv1.LeaseServiceClient
	store fencekeeperv1.FencedStoreServiceClient
}

// auth is how a client proves who it is: a bearer JWT, a client certificate, both or neither.
type auth struct {
	bearer string // sent as "authorization: Bearer <JWT>" on every call, streams included
	ca     string // PEM CA that the server's certificate must chain to; empty: the system's
	cert   string // PEM client certificate (mutual TLS), with its key
	key    string
}

// bearerToken is a JWT sent with every call. It does not insist on TLS: the tests run a cleartext
// server on loopback; anywhere else a bearer token belongs on TLS only.
type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerToken) RequireTransportSecurity() bool { return false }

// dial connects to a server given as http://host:port (gRPC over cleartext HTTP/2) or https://host:port
// (gRPC over TLS), with the credentials of a.
func dial(server string, a auth) (*client, error) {
	var transport credentials.TransportCredentials
	if target, ok := strings.CutPrefix(server, "https://"); ok {
		config := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.ca != "" {
			pem, err := os.ReadFile(a.ca)
			if err != nil {
				return nil, err
			}
			config.RootCAs = x509.NewCertPool()
			if !config.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", a.ca)
			}
		}
		if a.cert != "" || a.key != "" {
			pair, err := tls.LoadX509KeyPair(a.cert, a.key)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert and --tls-key: %w", err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		transport, server = credentials.NewTLS(config), target
	} else if target, ok := strings.CutPrefix(server, "http://"); ok {
		if a.ca != "" || a.cert != "" || a.key != "" {
			return nil, fmt.Errorf("--tls-ca, --tls-cert and --tls-key need an https:// server, got %q", server)
		}
		transport, server = insecure.NewCredentials(), target
	} else {
		return nil, fmt.Errorf("--server must look like http://host:port or https://host:port, got %q", server)
	}
	options := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	if a.bearer != "" {
		options = append(options, grpc.WithPerRPCCredentials(bearerToken(a.bearer)))
	}
	conn, err := grpc.NewClient(server, options...)
	if err != nil {
		return nil, err
	}
	return &client{conn: conn, lease: fencekeeperv1.NewLeaseServiceClient(conn), store: fencekeeperv1.NewFencedStoreServiceClient(conn)}, nil
}

// failure is what a failed call tells: its canonical status code and the ErrorInfo of its details.
type failure struct {
	Code   string
	Reason string
	Domain string
}

// failureOf reads the status of a failed call, and the google.rpc.ErrorInfo among its details
// (decoded by grpc-go from the grpc-status-details-bin trailer).
func failureOf(err error) (failure, bool) {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return failure{}, false
	}
	f := failure{Code: code.Code_name[int32(st.Code())]}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			f.Reason, f.Domain = info.GetReason(), info.GetDomain()
		}
	}
	return f, true
}

// expectFailure checks that err is a failed call with the given code and, unless empty, reason.
func expectFailure(err error, wantCode, wantReason string) error {
	if err == nil {
		return fmt.Errorf("expected %s, and the call succeeded", wantCode)
	}
	f, ok := failureOf(err)
	if !ok {
		return fmt.Errorf("expected %s, got a non-status error: %w", wantCode, err)
	}
	if f.Code != wantCode || (wantReason != "" && f.Reason != wantReason) {
		return fmt.Errorf("expected %s %s, got %s %s (%v)", wantCode, wantReason, f.Code, f.Reason, err)
	}
	if wantReason != "" && f.Domain != "fencekeeper.io" {
		return fmt.Errorf("expected ErrorInfo domain fencekeeper.io, got %q", f.Domain)
	}
	return nil
}
