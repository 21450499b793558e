// Package probeio is what the probes of this module share (cmd/fk-client-go-probe and
// controller-runtime-probe, which test/integrations drive): their JSON event lines, how a lease ended,
// and the fenced write of their "write K V" command. For those probes only; not part of the lock's API.
package probeio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencekeeper "github.com/fencekeeper/fencekeeper/sdk/go"
)

var out sync.Mutex

// Emit prints one event as a JSON line: its name, the time, and fields.
func Emit(event string, fields map[string]any) {
	line := map[string]any{"event": event, "at": Ms(time.Now())}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	out.Lock()
	defer out.Unlock()
	fmt.Println(string(b))
}

// Ms is a time as the events give it: ms since the epoch.
func Ms(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

// LossFields says how a lease ended, from its error.
func LossFields(err error) map[string]any {
	var lost *fencekeeper.LeaseLostError
	if errors.As(err, &lost) {
		return map[string]any{"why": string(lost.Why), "valid_until": Ms(lost.ValidUntil), "lost_at": Ms(lost.LostAt), "generation": strconv.FormatInt(lost.Token.Generation, 10)}
	}
	if err == nil {
		return map[string]any{"why": "held"}
	}
	return map[string]any{"cause": err.Error()}
}

// Write runs the command "write K V" (args: K and V) through the fenced store (FENCE_MODE_LIVE) with
// token, the last term's (nil: never elected), and prints its event: write ok generation fence, or the
// error and its reason.
func Write(fk *fencekeeper.Client, token *fencekeeper.Token, args []string) {
	if len(args) != 2 {
		Emit("error", map[string]any{"message": "write K V"})
		return
	}
	if token == nil {
		Emit("write", map[string]any{"ok": false, "error": "never elected"})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	commit, err := fk.Store().Put(ctx, *token, args[0], []byte(args[1]), fencekeeper.WithFenceMode(fencekeeper.FenceLive))
	cancel()
	line := map[string]any{"ok": err == nil, "generation": strconv.FormatInt(token.Generation, 10)}
	if err != nil {
		var se *fencekeeper.StatusError
		line["error"] = fmt.Sprintf("%T", err)
		if errors.As(err, &se) {
			line["reason"] = se.Reason
		}
		line["message"] = err.Error()
	} else {
		line["fence"] = strconv.FormatInt(commit.Fence, 10)
	}
	Emit("write", line)
}

// Released prints the event "released" with how the lease ended (no fields: never elected).
func Released(lease *fencekeeper.Lease) {
	fields := map[string]any{}
	if lease != nil {
		fields = LossFields(lease.Err())
	}
	Emit("released", fields)
}

// Serve runs the commands read from stdin, one a line, each by its first word with the words after it;
// an unknown one is answered with an error event. It returns at the end of stdin.
func Serve(commands map[string]func(args []string)) {
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		if run, ok := commands[fields[0]]; ok {
			run(fields[1:])
		} else {
			Emit("error", map[string]any{"message": "unknown command " + fields[0]})
		}
	}
}
