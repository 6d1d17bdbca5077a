package transport_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/server"
)

// Ending an HTTP session while a run_prompt is in flight cancels that
// call's run (design §3.1): the slot comes back, the record says the caller
// cancelled, and the DELETE is answered without waiting for the gateway.
// The gate is released only after the DELETE has been answered, so a
// server that waited for the run would answer only after the gateway
// client's own timeout and the record would not say the caller cancelled.
//
// A go-sdk client's Close is not tested here: ClientSession.Close (go-sdk
// v1.8.0) waits for the client's own outgoing calls before its transport
// sends the DELETE, so the server hears nothing until the call has ended.
func TestEndingAnHTTPSessionCancelsItsCalls(t *testing.T) {
	for _, how := range []string{"DELETE"} {
		t.Run(how, func(t *testing.T) {
			g, c := tcpGateway(t)
			gate := gatewaytest.NewGate()
			g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("too late")))
			defer gate.Release()
			limits := oneSlot()
			ended := make(chan runs.Result, 1)
			hh := newHTTPHarness(t, fixture{limits: limits, opts: func(o *server.Options) {
				withGateway(c)(o)
				o.OnTerminal = func(res runs.Result) { ended <- res }
			}}, nil)
			cs := hh.clientAt(t, nil, true, eraStateful)

			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "summarize"}})
				errc <- err
			}()
			<-gate.Arrived()

			switch how {
			case "DELETE":
				req, err := http.NewRequest(http.MethodDelete, hh.url+"/mcp", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Mcp-Session-Id", cs.ID())
				req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				drain(resp)
				if resp.StatusCode != http.StatusNoContent {
					t.Fatalf("DELETE answered %d", resp.StatusCode)
				}
			}
			res := <-ended
			gate.Release()
			if res.Status != runs.StatusFailed || !strings.Contains(res.Error, runs.ErrCallerCancelled.Error()) {
				t.Fatalf("record %+v, want failed because the caller cancelled", res)
			}
			<-errc
			slot, err := hh.srv.Registry().Admit(context.Background())
			if err != nil {
				t.Fatalf("the run kept its slot: %v", err)
			}
			slot.Release()
		})
	}
}
