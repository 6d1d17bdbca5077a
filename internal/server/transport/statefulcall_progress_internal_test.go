package transport

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A call statefulCalls answers has its progress reach the client while it
// runs: writeSSE leaves only the reply, the stream's last event, to
// net/http, and flushes every notification before it. The slow tool sends
// a progress notification and then waits to be cancelled, so its response
// can only have begun if that notification was flushed.
func TestStatefulCallProgressArrivesWhileTheCallRuns(t *testing.T) {
	side := newStatefulSide(t, false, "2025-11-25", false)
	type first struct {
		event string
		err   error
		rest  func()
	}
	got := make(chan first, 1)
	go func() {
		resp, err := http.DefaultClient.Do(side.request(t, nil, toolCall("9", "slow", `{}`, `{"progressToken":"s"}`)))
		if err != nil {
			got <- first{err: err}
			return
		}
		br := bufio.NewReader(resp.Body)
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if err != nil || line == "\n" {
				break
			}
		}
		got <- first{event: ev.String(), rest: func() {
			io.Copy(io.Discard, br)
			resp.Body.Close()
		}}
	}()
	cancel := func() {
		side.post(t, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"enough"}}`)
	}
	select {
	case <-side.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not start")
	}
	var f first
	select {
	case f = <-got:
	case <-time.After(5 * time.Second):
		cancel()
		<-got
		t.Fatal("no event reached the client while the call ran: its progress notification was not flushed")
	}
	cancel()
	if f.err != nil {
		t.Fatal(f.err)
	}
	f.rest()
	if !strings.HasPrefix(f.event, "event: message\ndata: ") || !strings.Contains(f.event, `"notifications/progress"`) {
		t.Fatalf("first event %q; want the progress notification", f.event)
	}
	if side.taken.Load() != 1 {
		t.Fatalf("statefulCalls took %d calls, want the slow one", side.taken.Load())
	}
}
