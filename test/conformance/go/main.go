// The Go conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls that
// let the conformance test run it against the other languages' clients.
// calls runs many single calls in one process, one JSON line in and one out each: one start a test, not a call.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	fencekeeperv1 "github.com/fencekeeper/fencekeeper/gen/go/fencekeeper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

const usage = `usage: fk-conformance COMMAND --server http(s)://host:port [flags]
  scenario --resource R                      run the whole scenario of SCENARIO.md
  acquire  --resource R --holder H [--ttl SECONDS]   print the token
  put      --resource R --key K --value V TOKEN
  get      --resource R --key K
  release  --resource R TOKEN
  keys                                       print the token keys (ListTokenKeys)
  verify   --token-json FILE --keys-json FILE   check a token's signature offline (no --server)
  calls                                      many single calls in one process (no other arguments): a line
           on stdin is one call's arguments as a JSON array, e.g. ["keys","--server","http://h:p"]; the
           answer, a line on stdout: {"exit":N,"stdout":"...","stderr":"..."}, as the call alone gives
TOKEN: --generation G --lease-id L [--principal P --key-id K --signature BASE64]
credentials: [--bearer JWT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]`

func main() {
	if len(os.Args) == 2 && os.Args[1] == "calls" {
		os.Exit(runCalls(os.Stdin, os.Stdout))
	}
	os.Exit(runCall(os.Args[1:], os.Stdout, os.Stderr))
}

// runCall runs one command of args (the arguments after the program) as the process would, writing to
// stdout and stderr, and returns the exit code.
func runCall(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	command := args[0]
	if command == "calls" {
		fmt.Fprintln(stderr, "calls takes no other arguments")
		fmt.Fprintln(stderr, usage)
		return 2
	}
	flags := flag.NewFlagSet(command, flag.ContinueOnError)
	flags.SetOutput(stderr)
	server := flags.String("server", "", "the server, as http://host:port or https://host:port")
	resource := flags.String("resource", "", "the resource")
	holder := flags.String("holder", "go", "the holder label")
	ttl := flags.Int64("ttl", 2, "the lease TTL in seconds")
	key := flags.String("key", "", "the key")
	value := flags.String("value", "", "the value")
	generation := flags.Int64("generation", 0, "the token's generation")
	leaseID := flags.Int64("lease-id", 0, "the token's lease id")
	principal := flags.String("principal", "", "the token's principal")
	keyID := flags.String("key-id", "", "the token's key id")
	signature := flags.String("signature", "", "the token's signature, base64")
	tokenJSON := flags.String("token-json", "", "verify: the token, a JSON file")
	keysJSON := flags.String("keys-json", "", "verify: the keys, a JSON file")
	var credentials auth
	flags.StringVar(&credentials.bearer, "bearer", "", "a JWT, sent as authorization: Bearer")
	flags.StringVar(&credentials.ca, "tls-ca", "", "PEM CA of the server's certificate")
	flags.StringVar(&credentials.cert, "tls-cert", "", "PEM client certificate")
	flags.StringVar(&credentials.key, "tls-key", "", "PEM key of --tls-cert")
	err := flags.Parse(args[1:])
	needsResource := command != "keys" && command != "verify"
	if err != nil || (command != "verify" && *server == "") || (needsResource && *resource == "") {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if command == "verify" {
		if err := verifyFiles(stdout, *tokenJSON, *keysJSON); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	sig, err := base64.StdEncoding.DecodeString(*signature)
	if err != nil {
		fmt.Fprintln(stderr, "--signature is not base64:", err)
		return 2
	}
	c, err := dial(*server, credentials)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer c.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token := &fencekeeperv1.FencingToken{Resource: *resource, Generation: *generation, LeaseId: *leaseID, Principal: *principal, KeyId: *keyID, Signature: sig}

	var result map[string]any
	switch command {
	case "scenario":
		// The scenario prints its steps on the process's stdout: it runs only as its own process.
		if err := runScenario(ctx, *server, credentials, *resource); err != nil {
			fmt.Fprintln(stderr, "FAIL", err)
			return 1
		}
		return 0
	case "acquire":
		var res *fencekeeperv1.AcquireResponse
		res, err = c.lease.Acquire(ctx, &fencekeeperv1.AcquireRequest{Resource: *resource, Ttl: durationpb.New(time.Duration(*ttl) * time.Second), Holder: *holder})
		if err == nil {
			t := res.GetToken()
			result = map[string]any{
				"resource": t.GetResource(), "generation": itoa(t.GetGeneration()), "lease_id": itoa(t.GetLeaseId()),
				"principal": t.GetPrincipal(), "key_id": t.GetKeyId(), "signature": base64.StdEncoding.EncodeToString(t.GetSignature()),
			}
		}
	case "put":
		var res *fencekeeperv1.PutResponse
		res, err = c.store.Put(ctx, &fencekeeperv1.PutRequest{Resource: *resource, Key: *key, Value: []byte(*value), Mutation: &fencekeeperv1.Mutation{Token: token}})
		if err == nil {
			result = map[string]any{"fence": itoa(res.GetCommit().GetFence())}
		}
	case "get":
		var res *fencekeeperv1.GetResponse
		res, err = c.store.Get(ctx, &fencekeeperv1.GetRequest{Resource: *resource, Key: *key})
		if err == nil {
			result = map[string]any{"found": res.GetFound(), "value": string(res.GetValue())}
		}
	case "release":
		_, err = c.lease.Release(ctx, &fencekeeperv1.ReleaseRequest{Token: token})
		result = map[string]any{}
	case "keys":
		var res *fencekeeperv1.ListTokenKeysResponse
		res, err = c.lease.ListTokenKeys(ctx, &fencekeeperv1.ListTokenKeysRequest{})
		if err == nil {
			// The keys alone, as verify --keys-json reads them.
			keys := []keyJSON{}
			for _, k := range res.GetKeys() {
				keys = append(keys, keyJSON{KeyID: k.GetKeyId(), Algorithm: k.GetAlgorithm(), PublicKey: k.GetPublicKey()})
			}
			line, _ := json.Marshal(keys)
			fmt.Fprintln(stdout, string(line))
			return 0
		}
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if err != nil {
		f, ok := failureOf(err)
		if !ok {
			fmt.Fprintln(stderr, err)
			return 1
		}
		result = map[string]any{"ok": false, "code": f.Code, "reason": f.Reason}
	} else {
		result["ok"] = true
	}
	line, _ := json.Marshal(result)
	fmt.Fprintln(stdout, string(line))
	return 0
}

// answer is what calls prints for one call: the exit code and the output of that call alone.
type answer struct {
	Exit   int    `json:"exit"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// runCalls runs the calls of in, one JSON array of arguments a line, one after another, and writes
// each one's answer to out as a line of its own once the call is over. Each call dials its own
// connection with the credentials of its line, and closes it when it ends.
func runCalls(in io.Reader, out io.Writer) int {
	lines := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	for {
		line, readErr := lines.ReadString('\n')
		if readErr != nil && readErr != io.EOF {
			fmt.Fprintln(os.Stderr, "calls: reading stdin:", readErr)
			return 1
		}
		if line != "" {
			var a answer
			var args []string
			if err := json.Unmarshal([]byte(line), &args); err != nil || args == nil {
				a = answer{Exit: 2, Stderr: fmt.Sprintf("calls: a line must be a JSON array of strings, got %q\n", bytes.TrimRight([]byte(line), "\r\n"))}
			} else if len(args) > 0 && (args[0] == "scenario" || args[0] == "calls") {
				a = answer{Exit: 2, Stderr: fmt.Sprintf("calls: %s runs only as its own process\n", args[0])}
			} else {
				var stdout, stderr bytes.Buffer
				a.Exit = runCall(args, &stdout, &stderr)
				a.Stdout, a.Stderr = stdout.String(), stderr.String()
			}
			encoded, _ := json.Marshal(a)
			w.Write(encoded)
			w.WriteByte('\n')
			if err := w.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, "calls: writing stdout:", err)
				return 1
			}
		}
		if readErr == io.EOF {
			return 0
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tokenJSON is a token as the single calls print it: 64-bit integers as decimal strings, the signature
// in base64 (encoding/json's []byte).
type tokenJSON struct {
	Resource   string `json:"resource"`
	Generation int64  `json:"generation,string"`
	LeaseID    int64  `json:"lease_id,string"`
	Principal  string `json:"principal"`
	KeyID      string `json:"key_id"`
	Signature  []byte `json:"signature"`
	// Mode is the AcquireMode's number; absent: 0 (exclusive).
	Mode int32 `json:"mode,string,omitempty"`
}

// keyJSON is one key of ListTokenKeys, the public key in base64.
type keyJSON struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm,omitempty"`
	PublicKey []byte `json:"public_key"`
}

// verifyFiles verifies the token of one JSON file with the keys of another, and prints the outcome on out.
func verifyFiles(out io.Writer, tokenFile, keysFile string) error {
	var t tokenJSON
	var list []keyJSON
	if err := readJSON(tokenFile, &t); err != nil {
		return err
	}
	if err := readJSON(keysFile, &list); err != nil {
		return err
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range list {
		if k.Algorithm == "" || k.Algorithm == "Ed25519" {
			keys[k.KeyID] = ed25519.PublicKey(k.PublicKey)
		}
	}
	token := &fencekeeperv1.FencingToken{Resource: t.Resource, Generation: t.Generation, LeaseId: t.LeaseID, Principal: t.Principal, KeyId: t.KeyID, Signature: t.Signature,
		Mode: fencekeeperv1.AcquireMode(t.Mode)}
	result := map[string]any{"ok": true}
	if err := VerifyToken(token, keys); err != nil {
		result = map[string]any{"ok": false, "reason": err.Error()}
	}
	line, _ := json.Marshal(result)
	fmt.Fprintln(out, string(line))
	return nil
}

func readJSON(file string, into any) error {
	if file == "" {
		return errors.New("verify needs --token-json FILE and --keys-json FILE")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
