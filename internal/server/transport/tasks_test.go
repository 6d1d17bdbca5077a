package transport_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// rpcReply is the JSON-RPC response a POST answered with, whether as JSON
// or as the last event of an SSE stream.
func rpcReply(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	body := rec.Body.String()
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(body))
		body = ""
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				body = data
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("reply %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	return m
}

// The Tasks extension over the stateful streamable HTTP transport: the
// SDK routes tasks/* as custom methods on an HTTP session, and a tools/call
// whose run outlives the deadline answers the task on the POST.
func TestATaskOverStreamableHTTP(t *testing.T) {
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("eventually")))
	defer gate.Release()
	ended := make(chan runs.Result, 1)
	limits := defaultLimits()
	limits.ReplyDeadline = 100 * time.Millisecond
	h := newHarness(t, fixture{limits: limits, opts: func(o *server.Options) {
		withGateway(c)(o)
		o.OnTerminal = func(r runs.Result) { ended <- r }
	}})
	hd, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := rawPost(hd, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := rec.Header().Get("Mcp-Session-Id")
	init, _ := rpcReply(t, rec)["result"].(map[string]any)
	if caps, _ := init["capabilities"].(map[string]any); caps["extensions"] == nil {
		t.Fatalf("initialize %v does not advertise the extension", init)
	}
	// The session is ended as a client would, so none of its goroutines
	// outlives the test.
	defer func() {
		req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", session)
		hd.ServeHTTP(httptest.NewRecorder(), req)
	}()
	rawPost(hd, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	created, _ := rpcReply(t, rawPost(hd, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"summarize"}}}`))["result"].(map[string]any)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || created["status"] != "working" || id == "" {
		t.Fatalf("tools/call answered %v, want a CreateTaskResult", created)
	}
	get := func(n int) map[string]any {
		t.Helper()
		reply := rpcReply(t, rawPost(hd, session, `{"jsonrpc":"2.0","id":`+strconv.Itoa(n)+`,"method":"tasks/get","params":{"taskId":"`+id+`"}}`))
		res, _ := reply["result"].(map[string]any)
		if res == nil {
			t.Fatalf("tasks/get %v", reply)
		}
		return res
	}
	if got := get(3); got["status"] != "working" || got["resultType"] != "complete" {
		t.Fatalf("tasks/get while working %v", got)
	}

	gate.Release()
	if r := <-ended; r.RunID != id {
		t.Fatalf("run %s ended, want %s", r.RunID, id)
	}
	got := get(4)
	result, _ := got["result"].(map[string]any)
	content, _ := result["content"].([]any)
	if got["status"] != "completed" || len(content) != 1 || content[0].(map[string]any)["text"] != "eventually" {
		t.Fatalf("tasks/get once completed %v", got)
	}
	ack := rpcReply(t, rawPost(hd, session, `{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"`+id+`"}}`))
	if res, _ := ack["result"].(map[string]any); res["resultType"] != "complete" || res["status"] != nil {
		t.Fatalf("tasks/cancel of the finished task %v", ack)
	}
}

// The /mcp handler refuses a tasks/* request whose Mcp-Name is not its
// taskId, before the SDK, which checks Mcp-Name only for tools/call,
// resources/read and prompts/get.
func TestTheMCPEndpointChecksTheTaskRoutingHeader(t *testing.T) {
	h := newHarness(t, fixture{})
	hd, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":"abc"}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tasks/get")
	req.Header.Set("Mcp-Name", "not-abc")
	rec := httptest.NewRecorder()
	hd.ServeHTTP(rec, req)
	reply := rpcReply(t, rec)
	if e, _ := reply["error"].(map[string]any); rec.Code != http.StatusBadRequest || e["code"] != float64(-32020) {
		t.Fatalf("%d %v, want 400 with -32020", rec.Code, reply)
	}
}
