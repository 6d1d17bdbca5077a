package transport_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// A request whose id the SDK would answer under another id (a fraction,
// or beyond what float64 holds exactly) is refused with 400 and -32600
// under the id as sent, in both protocol eras (issue #11 item 8).
func TestHTTPRefusesInexactIDs(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "", initializeBody, "")
	drain(resp)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: status %d, no session", resp.StatusCode)
	}
	for _, tc := range []struct{ name, session, body, id string }{
		{"stateful, a fraction", session, `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, "1.5"},
		{"stateful, 2^70", session, `{"jsonrpc":"2.0","id":1180591620717411303424,"method":"tools/list"}`, "1180591620717411303424"},
		{"stateful, in a batch", session, `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2.25,"method":"ping"}]`, "2.25"},
		{"stateless, a fraction", "", `{"jsonrpc":"2.0","id":7.5,"method":"server/discover","params":{}}`, "7.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, tc.session, tc.body, "")
			defer drain(resp)
			body, _ := io.ReadAll(resp.Body)
			var reply struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int }
			}
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &reply) != nil || string(reply.ID) != tc.id || reply.Error.Code != -32600 {
				t.Fatalf("status %d, body %s; want 400 and -32600 under id %s", resp.StatusCode, body, tc.id)
			}
		})
	}
	// An exact id is still served.
	resp = post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, session, `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, "")
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an exact id: status %d", resp.StatusCode)
	}
}
