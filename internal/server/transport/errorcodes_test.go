package transport_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// rpcError is the error of the one JSON-RPC response in an HTTP answer,
// plain JSON or an SSE stream.
type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func replyOf(t *testing.T, resp *http.Response) rpcError {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(text, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id"`) {
				text = data
			}
		}
	}
	var r rpcError
	if err := json.Unmarshal([]byte(text), &r); err != nil || r.Error == nil {
		t.Fatalf("answer %d %q is not a JSON-RPC error (%v)", resp.StatusCode, body, err)
	}
	return r
}

// waitFor polls cond until it holds (a state another goroutine reaches
// over the network, which no synctest bubble spans), failing after 10 s
// with what was awaited.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// openSession initializes a stateful session over raw HTTP.
func openSession(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, context.Background(), url, "Bearer "+testToken, "", initializeBody, "")
	drain(resp)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	drain(post(t, context.Background(), url, "Bearer "+testToken, session, `{"jsonrpc":"2.0","method":"roots/list"}`, ""))
	return session
}

// No JSON-RPC error goes out with code 0, which JSON-RPC 2.0 does not
// define (go-sdk v1.8.0 sends any uncoded error so): each case below did.
func TestErrorRepliesHaveValidCodes(t *testing.T) {
	t.Run("duplicate initialize", func(t *testing.T) {
		hh := newHTTPHarness(t, fixture{}, nil)
		session := openSession(t, hh.url+"/mcp")
		r := replyOf(t, post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, session, initializeBody, ""))
		if r.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Error.Message, "duplicate") || string(r.ID) != "1" {
			t.Fatalf("duplicate initialize answered %s %+v, want -32600 under id 1", r.ID, *r.Error)
		}
	})
	t.Run("sessionless tools/call", func(t *testing.T) {
		hh := newHTTPHarness(t, fixture{}, nil)
		resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "",
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo"}}}`, "")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400 (the transport spec's answer to a sessionless request)", resp.StatusCode)
		}
		r := replyOf(t, resp)
		if r.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Error.Message, "send initialize first") || string(r.ID) != "8" {
			t.Fatalf("sessionless tools/call answered %s %+v, want -32600 under id 8", r.ID, *r.Error)
		}
		// A sessionless ping is still answered, as before.
		resp = post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, "")
		drain(resp)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("sessionless ping: %d", resp.StatusCode)
		}
	})
}
