package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A DELETE cancels the session's calls, then closes the session, whose
// close waits for the SDK's calls to return; a plain call POSTed on the
// session meanwhile must not run on, uncancelled, after the session has
// ended (the SDK refuses a call on a closing connection). statefulCalls
// took it, as the session was still open to it until the DELETE had
// returned, and nothing cancelled it.
func TestStatefulCallsDuringADeleteDoNotOutliveIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &Calls{}
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		schema := json.RawMessage(`{"type":"object"}`)
		stubborn := make(chan struct{}, 1)
		srv.AddTool(&mcp.Tool{Name: "stubborn", InputSchema: schema}, calls.Track(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Cancelled, it takes a minute to stop: the DELETE's close
			// waits for it.
			stubborn <- struct{}{}
			<-ctx.Done()
			time.Sleep(time.Minute)
			return nil, ctx.Err()
		}))
		slowStarted := make(chan struct{}, 1)
		srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: schema}, calls.Track(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			slowStarted <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}))
		hd, err := httpHandler(Backend{MCP: srv, Calls: calls}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{})
		if err != nil {
			t.Fatal(err)
		}
		bg := context.Background()
		rec := rawCall(bg, hd, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := rec.Header().Get(headerSessionID)
		if sid == "" {
			t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		rawCall(bg, hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

		// A call the SDK answers (its _meta is not the plain shape).
		go rawCall(bg, hd, sid, toolCall("1", "stubborn", `{}`, `{"x":1}`))
		<-stubborn
		deleted := make(chan int)
		go func() {
			req := httptest.NewRequestWithContext(bg, http.MethodDelete, "http://localhost/mcp", nil)
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set(headerSessionID, sid)
			rec := httptest.NewRecorder()
			hd.ServeHTTP(rec, req)
			deleted <- rec.Code
		}()
		synctest.Wait() // the DELETE waits for the stubborn call

		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		slowDone := make(chan string)
		go func() { slowDone <- rawCall(ctx, hd, sid, toolCall("2", "slow", `{}`, "")).Body.String() }()
		synctest.Wait()

		time.Sleep(2 * time.Minute)
		if code := <-deleted; code != http.StatusNoContent {
			t.Fatalf("DELETE: %d", code)
		}
		synctest.Wait()
		select {
		case body := <-slowDone:
			if strings.Contains(body, `"result"`) {
				t.Errorf("the call made during the DELETE got a result: %s", body)
			}
		default:
			ran := len(slowStarted) > 0
			cancel()
			<-slowDone
			t.Errorf("a call POSTed while its session was being deleted still runs after the DELETE returned (handler started: %v)", ran)
		}
	})
}
