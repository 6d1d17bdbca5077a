package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a gateway with its control API served by httptest.
type harness struct {
	gw      *gatewaytest.Server
	ctl     *control
	control *httptest.Server
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	gw, err := gatewaytest.NewServer(gatewaytest.ServerOptions{Logf: t.Logf})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ctl := newControl(gw)
	srv := httptest.NewServer(ctl.handler())
	t.Cleanup(func() {
		ctl.stop()
		gw.Close()
		srv.Close()
	})
	return &harness{gw: gw, ctl: ctl, control: srv}
}

// send sends one request and returns the status and body. It does not
// touch t, so goroutines may call it.
func send(method, url, key, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// do is send for the test goroutine: a transport failure fails the test.
func do(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	code, b, err := send(method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, b
}

func (h *harness) ctlDo(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return do(t, method, h.control.URL+path, "", body)
}

func (h *harness) chat(t *testing.T, user string) (int, string) {
	t.Helper()
	code, body, err := h.sendChat(user)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	return code, body
}

func (h *harness) sendChat(user string) (int, string, error) {
	msg, _ := json.Marshal(user)
	return send("POST", h.gw.URL()+"/chat/completions", h.gw.APIKey(),
		`{"model":"test-model","messages":[{"role":"user","content":`+string(msg)+`}]}`)
}

// content is the first choice's message content of a chat reply.
func content(t *testing.T, body string) string {
	t.Helper()
	var r struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Choices) != 1 || r.Choices[0].Message.Content == nil {
		t.Fatalf("not a chat reply with content: %s (%v)", body, err)
	}
	return *r.Choices[0].Message.Content
}

func TestControlQueuesRepliesInOrder(t *testing.T) {
	h := newHarness(t)
	if code, body := h.ctlDo(t, "POST", "/control/enqueue", `[{"text":"one"},{"text":"two","reasoning":"thought"}]`); code != 200 {
		t.Fatalf("enqueue = %d %s", code, body)
	}
	for _, want := range []string{"one", "two"} {
		code, body := h.chat(t, "hi")
		if code != 200 || content(t, body) != want {
			t.Fatalf("chat = %d %s, want %q", code, body, want)
		}
	}
	if code, _ := h.chat(t, "hi"); code != 500 {
		t.Fatalf("chat past the queue = %d, want 500 (unscripted)", code)
	}
}

func TestControlRefusesBadRepliesAndQueuesNothing(t *testing.T) {
	cases := []struct{ name, body string }{
		{"two kinds", `[{"text":"a","hang":true}]`},
		{"no kind", `[{}]`},
		{"unknown key", `[{"txt":"a"}]`},
		{"echo queued ahead of its request", `[{"echo":"x"}]`},
		{"gate without then", `[{"gate":"g"}]`},
		{"call without name", `[{"calls":[{"args":{}}]}]`},
		{"not an HTTP status", `[{"status":42}]`},
		{"good then bad", `[{"text":"a"},{"status":1000}]`},
		{"trailing value", `[{"text":"a"}] []`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if code, body := h.ctlDo(t, "POST", "/control/enqueue", tc.body); code != 400 || !strings.Contains(body, `"error"`) {
				t.Fatalf("enqueue %s = %d %s, want 400 with an error", tc.body, code, body)
			}
			if code, _ := h.chat(t, "hi"); code != 500 {
				t.Fatalf("chat after a refused enqueue = %d, want 500: nothing may be queued", code)
			}
		})
	}
}

func TestControlDefaultReplyEchoesTheLastUserMessage(t *testing.T) {
	h := newHarness(t)
	if code, body := h.ctlDo(t, "POST", "/control/respond", `{"echo":"you said: "}`); code != 200 {
		t.Fatalf("respond = %d %s", code, body)
	}
	for _, msg := range []string{"first", "second"} {
		code, body := h.chat(t, msg)
		if code != 200 || content(t, body) != "you said: "+msg {
			t.Fatalf("chat %q = %d %s", msg, code, body)
		}
	}
	if code, body := h.ctlDo(t, "POST", "/control/respond", `null`); code != 200 {
		t.Fatalf("respond null = %d %s", code, body)
	}
	if code, _ := h.chat(t, "hi"); code != 500 {
		t.Fatalf("chat after clearing the default reply = %d, want 500", code)
	}
	if code, _ := h.ctlDo(t, "POST", "/control/respond", `{"status":1}`); code != 400 {
		t.Fatalf("a bad default reply = %d, want 400", code)
	}
}

func TestControlGateHoldsARequestUntilReleased(t *testing.T) {
	h := newHarness(t)
	if code, body := h.ctlDo(t, "POST", "/control/respond", `{"gate":"hold","then":{"text":"released"}}`); code != 200 {
		t.Fatalf("respond = %d %s", code, body)
	}
	// Before anything arrives, a bounded wait says so.
	if code, body := h.ctlDo(t, "GET", "/control/gate?name=hold&arrived=1&wait=0s", ""); code != 200 || !strings.Contains(body, `"arrived":false`) {
		t.Fatalf("gate before any request = %d %s, want arrived false", code, body)
	}

	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, body, err := h.sendChat("hi")
		done <- result{code, body, err}
	}()
	code, body := h.ctlDo(t, "GET", "/control/gate?name=hold&arrived=1&wait=30s", "")
	if code != 200 || !strings.Contains(body, `"arrived":true`) || !strings.Contains(body, `"waiting":1`) {
		t.Fatalf("gate after the request = %d %s, want arrived with one waiting", code, body)
	}
	select {
	case r := <-done:
		t.Fatalf("the gated request answered before release: %d %s %v", r.code, r.body, r.err)
	default:
	}
	if code, body := h.ctlDo(t, "POST", "/control/gate/release", `{"gate":"hold"}`); code != 200 {
		t.Fatalf("release = %d %s", code, body)
	}
	r := <-done
	if r.err != nil || r.code != 200 || content(t, r.body) != "released" {
		t.Fatalf("gated chat = %d %s, want the reply behind the gate", r.code, r.body)
	}
	if code, body := h.ctlDo(t, "GET", "/control/gate?name=hold", ""); code != 200 || !strings.Contains(body, `"waiting":0`) {
		t.Fatalf("gate after release = %d %s, want none waiting", code, body)
	}
	for _, bad := range []string{"/control/gate", "/control/gate?name=g&arrived=x", "/control/gate?name=g&wait=soon"} {
		if code, _ := h.ctlDo(t, "GET", bad, ""); code != 400 {
			t.Errorf("GET %s = %d, want 400", bad, code)
		}
	}
}

func TestControlStopEndsAGateLongPoll(t *testing.T) {
	h := newHarness(t)
	done := make(chan string, 1)
	go func() {
		_, body, err := send("GET", h.control.URL+"/control/gate?name=never&arrived=1&wait=60s", "", "")
		if err != nil {
			body = err.Error()
		}
		done <- body
	}()
	h.ctl.stop()
	if body := <-done; !strings.Contains(body, `"arrived":false`) {
		t.Fatalf("long poll after stop = %s, want arrived false", body)
	}
}

func TestControlReportsRequestsAndReplacesModels(t *testing.T) {
	h := newHarness(t)
	h.ctlDo(t, "POST", "/control/enqueue", `[{"text":"a"}]`)
	h.chat(t, "recorded message")
	code, body := h.ctlDo(t, "GET", "/control/requests", "")
	if code != 200 || !strings.Contains(body, "recorded message") || !strings.Contains(body, `"in_flight":0`) {
		t.Fatalf("requests = %d %s", code, body)
	}
	if code, body := h.ctlDo(t, "POST", "/control/models", `[{"id":"other-model","description":"d","context":8,"thinking":"never"}]`); code != 200 {
		t.Fatalf("models = %d %s", code, body)
	}
	if code, body := do(t, "GET", h.gw.URL()+"/models", h.gw.APIKey(), ""); code != 200 || !strings.Contains(body, "other-model") || strings.Contains(body, "test-model") {
		t.Fatalf("/v1/models after replacing = %d %s", code, body)
	}
}

func TestRunAnnouncesServesTheScriptAndStopsWhenStdinCloses(t *testing.T) {
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, []byte(`{"replies":[{"text":"from the script"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"-stdin-lifeline", "-script", scriptPath, "-api-key", "k-123"}, stdinR, stdoutW, io.Discard)
		stdoutW.Close()
		exit <- code
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("read the ready line: %v", err)
	}
	var r ready
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.APIKey != "k-123" || !strings.HasSuffix(r.URL, "/v1") || r.Control == "" {
		t.Fatalf("ready line %q (%v)", line, err)
	}
	code, body := do(t, "POST", r.URL+"/chat/completions", r.APIKey, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || content(t, body) != "from the script" {
		t.Fatalf("chat = %d %s, want the scripted reply", code, body)
	}
	if code, _ := do(t, "GET", r.Control+"/control/requests", "", ""); code != 200 {
		t.Fatalf("control = %d", code)
	}
	stdinW.Close()
	if code := <-exit; code != 0 {
		t.Fatalf("run = %d after stdin closed, want 0", code)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestRunStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run(ctx, nil, strings.NewReader(""), stdoutW, io.Discard)
		stdoutW.Close()
		exit <- code
	}()
	if _, err := bufio.NewReader(stdoutR).ReadString('\n'); err != nil {
		t.Fatalf("read the ready line: %v", err)
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("run = %d after cancel, want 0", code)
	}
}

func TestRunRefusesBadInvocations(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"-nope"}, 2},
		{"stray argument", []string{"extra"}, 2},
		{"missing script", []string{"-script", filepath.Join(dir, "absent.json")}, 1},
		{"script with an unknown key", []string{"-script", write("k.json", `{"replys":[]}`)}, 1},
		{"script with a bad reply", []string{"-script", write("r.json", `{"replies":[{}]}`)}, 1},
		{"bad key", []string{"-api-key", "two words"}, 1},
		{"bad control address", []string{"-control", "not an address"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := run(context.Background(), tc.args, strings.NewReader(""), io.Discard, &stderr); code != tc.want {
				t.Fatalf("run(%q) = %d, want %d; stderr: %s", tc.args, code, tc.want, stderr.String())
			}
			if stderr.Len() == 0 {
				t.Fatalf("run(%q) said nothing on stderr", tc.args)
			}
		})
	}
}

// A "sleep" default reply holds each request for the seconds its last user
// message states. Only the lower bound is asserted: the reply can never come
// early, however loaded the machine is.
func TestControlSleepHoldsEachRequestForTheSecondsItStates(t *testing.T) {
	h := newHarness(t)
	if code, body := h.ctlDo(t, "POST", "/control/respond", `{"sleep":true,"then":{"echo":"slept: "}}`); code != 200 {
		t.Fatalf("respond = %d %s", code, body)
	}
	start := time.Now()
	code, body := h.chat(t, "Take 0.2 seconds.")
	if code != 200 || content(t, body) != "slept: Take 0.2 seconds." {
		t.Fatalf("chat = %d %s", code, body)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("answered after %v, before the 0.2 s the message asked for", waited)
	}
	if code, body := h.chat(t, "no time given"); code != 500 || !strings.Contains(body, `"sleep" needs a number of seconds`) {
		t.Fatalf("chat without a number = %d %s, want a 500 saying what is missing", code, body)
	}
	for _, bad := range []string{`[{"sleep":true,"then":{"text":"x"}}]`} {
		if code, _ := h.ctlDo(t, "POST", "/control/enqueue", bad); code != 400 {
			t.Fatalf("a queued sleep = %d, want 400: it needs the request", code)
		}
	}
	if code, _ := h.ctlDo(t, "POST", "/control/respond", `{"sleep":true}`); code != 400 {
		t.Fatalf("a sleep without then = %d, want 400", code)
	}
}
