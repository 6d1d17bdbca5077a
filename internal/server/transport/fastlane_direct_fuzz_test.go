package transport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// rawSession is one initialized stdio session whose replies are read as
// raw lines.
type rawSession struct {
	in    *io.PipeWriter
	lines <-chan string
	taken *atomic.Int64
}

// readLines delivers the lines read from r, each with its newline, until
// r ends.
func readLines(r io.Reader) <-chan string {
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	return lines
}

func newRawSession(t testing.TB, b transport.Backend, lane bool) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &rawSession{in: inW, lines: readLines(outR), taken: new(atomic.Int64)}
	served := make(chan error, 1)
	go func() {
		served <- transport.ServeStdioLane(context.Background(), inR, outW, b, 10*time.Second, lane, s.taken)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	s.roundTrip(t, initializeBody)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawSession) send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// roundTrip sends line and returns the next message written.
func (s *rawSession) roundTrip(t testing.TB, line string) string {
	t.Helper()
	s.send(t, line)
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("stdout ended")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no reply to %.200q", line)
	}
	return ""
}

// FuzzDirectAnswer holds the server's direct answer to a tools/call
// (Backend.Direct, through the stdio fast lane) to the SDK's answer to
// the same line, byte for byte once run ids and durations are blanked,
// for random arguments of every built-in tool, an unknown tool and a
// prompt name. Both sessions are served by one server.
func FuzzDirectAnswer(f *testing.F) {
	addDirectSeeds(f)
	prompts := map[string]string{"trio.md": trioPrompt, "echo.md": echoPrompt}
	h := newHarness(f, fixture{prompts: prompts})
	b := h.srv.Backend()
	direct := newRawSession(f, b, true)
	sdk := newRawSession(f, b, false)
	var id atomic.Int64
	f.Fuzz(func(t *testing.T, tool uint8, args string) {
		// The plain shape only (an object of arguments on one line): any
		// other goes to the SDK on both sessions.
		if !plainArgs(args) {
			return
		}
		n := id.Add(1)
		line := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(n, 10) + `,"method":"tools/call","params":{"name":"` +
			directTools[int(tool)%len(directTools)] + `","arguments":` + args + `}}`
		before := direct.taken.Load()
		got := direct.roundTrip(t, line)
		want := sdk.roundTrip(t, line)
		if direct.taken.Load() != before+1 {
			t.Fatalf("the lane did not take %s", line)
		}
		got = volatileBytes.ReplaceAllString(volatileText.ReplaceAllString(got, "x"), "$1")
		want = volatileBytes.ReplaceAllString(volatileText.ReplaceAllString(want, "x"), "$1")
		if got != want {
			t.Errorf("%s\n direct: %s sdk:    %s", line, got, want)
		}
	})
}

func containsNewline(s string) bool {
	for i := range len(s) {
		if s[i] == '\n' || s[i] == '\r' {
			return true
		}
	}
	return false
}

// directTools are the tools the direct-answer fuzz targets call: the
// built-in ones and a prompt's name (not a tool).
var directTools = []string{"run_prompt", "list_prompts", "check_run", "need_prompt", "echo"}

// addDirectSeeds adds the direct-answer fuzz targets' seeds: a tool
// (an index into directTools) and its arguments.
func addDirectSeeds(f *testing.F) {
	for _, seed := range []struct {
		tool uint8
		args string
	}{
		{0, `{"prompt":"echo","args":"hi"}`},
		{0, `{"prompt":"trio"}`},
		{0, `{"prompt":"echo","args":"<b>&amp;</b> \u2028 \ud800 \u0000 é"}`},
		{0, `{"prompt":"echo","arguments":{"a":1}}`},
		{0, `{"prompt":"echo","args":5}`},
		{0, `{"prompt":"no such"}`},
		{0, `{"prompt":"echo","input_text":"a","input_file":"b"}`},
		{0, `{}`},
		{1, `{"cursor":"1"}`},
		{1, `{"cursor":7}`},
		{1, `{"x":null}`},
		{2, `{"run_id":"r","include_trace":true}`},
		{2, `{"run_id":"0123456789abcdef0123456789abcdef"}`},
		{3, `{"capability":"echo"}`},
		{4, `{}`},
	} {
		f.Add(seed.tool, seed.args)
	}
}

// plainArgs reports whether args are of the plain shape (an object of
// arguments on one line): any other goes to the SDK on both paths.
func plainArgs(args string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(args), &obj) == nil && args[0] == '{' && !containsNewline(args)
}
