// A program outside the library's module that requires it by its module path, as a user's would (the
// replace directives stand in for a published version): scripts/setup-polyglot.sh builds it, and
// test/sdk/go.test.ts runs it against a real server.
module example.com/fencekeeper-user

go 1.26.0

require github.com/fencekeeper/fencekeeper/sdk/go v0.0.0

require (
	github.com/fencekeeper/fencekeeper/gen/go v0.0.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/fencekeeper/fencekeeper/gen/go => ../../../gen/go
	github.com/fencekeeper/fencekeeper/sdk/go => ..
)
