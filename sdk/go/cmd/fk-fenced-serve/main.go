// fk-fenced-serve is a service that owns its items, fenced with package fencedhttp, for the tests of
// test/fenced-http/go.test.ts:
//
//	fk-fenced-serve --server URL
//
// serves on loopback, on ports of its own, and prints them as one JSON line {"http": URL, "grpc": ADDR}:
//   - HTTP: PUT /items/<resource> writes the body as the resource's item, behind Endpoint.Middleware (a
//     body "slow..." takes 400 ms);
//     GET /items/<resource> answers {"value", "generation"}; GET /admits answers how many times the
//     fence store was asked.
//   - gRPC: FencedStoreService.Put writes value as the item of request.resource, behind
//     Endpoint.UnaryInterceptor.
//
// The fences are a MemoryStore; the keys come from the fencekeeper server at URL. Runs until stdin ends.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
	"github.com/fencekeeper/fencekeeper/sdk/go/fencedhttp"
	"google.golang.org/grpc"
)

type item struct {
	Value      string `json:"value"`
	Generation string `json:"generation"`
}

type items struct {
	mu sync.Mutex
	m  map[string]item
}

func (s *items) put(resource, value string, generation int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[resource] = item{value, strconv.FormatInt(generation, 10)}
}

type storeServer struct {
	fencekeeperv1.UnimplementedFencedStoreServiceServer
	items *items
}

func (s storeServer) Put(ctx context.Context, req *fencekeeperv1.PutRequest) (*fencekeeperv1.PutResponse, error) {
	t, _ := fencedhttp.TokenFrom(ctx)
	s.items.put(req.GetResource(), string(req.GetValue()), t.Generation)
	return &fencekeeperv1.PutResponse{}, nil
}

func main() {
	server := flag.String("server", "", "the fencekeeper server's URL")
	flag.Parse()
	client, err := fencekeeper.New(fencekeeper.Options{Servers: []string{*server}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer client.Close()
	store := &fencedhttp.MemoryStore{}
	endpoint := fencedhttp.New(fencedhttp.NewKeyCache(client.TokenKeys, time.Minute), store)
	data := &items{m: map[string]item{}}

	mux := http.NewServeMux()
	mux.HandleFunc("PUT /items/{resource}", func(w http.ResponseWriter, r *http.Request) {
		t, _ := fencedhttp.TokenFrom(r.Context())
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(string(body), "slow") {
			time.Sleep(400 * time.Millisecond)
		}
		data.put(t.Resource, string(body), t.Generation)
		_ = json.NewEncoder(w).Encode(map[string]string{"written": string(body)})
	})
	mux.HandleFunc("GET /items/{resource}", func(w http.ResponseWriter, r *http.Request) {
		data.mu.Lock()
		it, ok := data.m[r.PathValue("resource")]
		data.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(it)
	})
	mux.HandleFunc("GET /admits", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]int{"admits": admits(store)})
	})
	resourceOf := func(r *http.Request) (string, bool) {
		if r.Method != http.MethodPut || !strings.HasPrefix(r.URL.Path, "/items/") {
			return "", false
		}
		resource, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/items/"))
		return resource, err == nil
	}
	httpListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() { _ = http.Serve(httpListener, endpoint.Middleware(resourceOf, mux)) }()

	grpcServer := grpc.NewServer(grpc.UnaryInterceptor(endpoint.UnaryInterceptor(func(_ context.Context, method string, req any) (string, bool) {
		if p, ok := req.(*fencekeeperv1.PutRequest); ok {
			return p.GetResource(), true
		}
		return "", false
	})))
	fencekeeperv1.RegisterFencedStoreServiceServer(grpcServer, storeServer{items: data})
	grpcListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() { _ = grpcServer.Serve(grpcListener) }()

	line, _ := json.Marshal(map[string]string{"http": "http://" + httpListener.Addr().String(), "grpc": "http://" + grpcListener.Addr().String()})
	fmt.Println(string(line))
	_, _ = io.Copy(io.Discard, os.Stdin)
	grpcServer.Stop()
}

func admits(s *fencedhttp.MemoryStore) int {
	return s.AdmitCount()
}
