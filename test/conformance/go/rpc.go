package main

import (
	"fmt"
	"strings"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// client is one connection to the server with a stub of each service.
type client struct {
	conn  *grpc.ClientConn
	lease fencekeeperv1.LeaseServiceClient
	store fencekeeperv1.FencedStoreServiceClient
}

// dial connects to a server given as http://host:port (gRPC over cleartext HTTP/2).
func dial(server string) (*client, error) {
	target, ok := strings.CutPrefix(server, "http://")
	if !ok {
		return nil, fmt.Errorf("--server must look like http://host:port, got %q", server)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
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
