package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// standInCall (statelessCalls' one-pass check for a stand-in session's
// call) takes only requests directCall takes: every check directCall made
// before a stand-in session answered a call is still made (headers,
// Content-Type and Accept, Last-Event-ID, Mcp-Method and Mcp-Name, the
// protocol version in the header and _meta, plain unique members, one
// request, not a notification or a batch).
func FuzzStandInCallWithinDirectCall(f *testing.F) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{` + meta + `,"name":"t","arguments":{"a":1}}}`,
	} {
		f.Add(b, "t", "2026-07-28", "tools/call")
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},` + meta + `}}`
	// What directCall refuses: each a seed, so that a plain go test run
	// checks it.
	f.Add(call, "u", "2026-07-28", "tools/call")
	f.Add(call, "t", "2025-11-25", "tools/call")
	f.Add(call, "t", "2026-07-28", "tools/list")
	f.Add(`[`+call+`]`, "t", "2026-07-28", "tools/call")
	f.Add(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t",`+meta+`}}`, "t", "2026-07-28", "tools/call")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"t",`+meta+`}}`, "t", "2026-07-28", "tools/call")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"","arguments":{},`+meta+`}}`, "", "2026-07-28", "tools/call")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, "t", "2026-07-28", "tools/call")
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	s := &stateless{srv: srv, impl: &mcp.Implementation{Name: "s", Version: "1"}, clients: map[string]client{}}
	f.Fuzz(func(t *testing.T, body, name, version, method string) {
		mk := func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set(headerProtocolVersion, version)
			r.Header.Set("Mcp-Method", method)
			r.Header.Set(headerMcpName, name)
			if _, ok := readBody(httptest.NewRecorder(), r); !ok {
				t.Skip()
			}
			return r
		}
		_, _, _, took := s.standInCall(mk())
		_, ok := directCall(mk())
		if took && !ok {
			t.Fatalf("standInCall takes what directCall refused: %s (name %q, version %q, method %q)", body, name, version, method)
		}
	})
}
