package transport_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// FuzzHTTPDirectAnswer holds the server's direct answer to a tools/call
// over HTTP (Backend.Direct, through statefulCalls on a stateful session
// and through statelessCalls' stand-in sessions at 2026-07-28) to the
// SDK's handlers' answers to the same POST: status, headers and bytes,
// once run ids and durations are blanked, for the seeds and random
// arguments of FuzzDirectAnswer. All four handlers serve one server.
func FuzzHTTPDirectAnswer(f *testing.F) {
	addDirectSeeds(f)
	h := newHarness(f, fixture{prompts: map[string]string{"trio.md": trioPrompt, "echo.md": echoPrompt}})
	stateful, statefulSDK, statelessSDK, directs := directAndSDKHandlers(f, h)
	directSID, sdkSID := openRecordedSession(f, stateful), openRecordedSession(f, statefulSDK)
	const meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	// The first 2026-07-28 call goes through the SDK's session; the
	// stand-in sessions answer from the second.
	statelessPost(stateful, "list_prompts", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_prompts","arguments":{}`+meta+`}}`)
	answer := func(s string) string {
		return volatileBytes.ReplaceAllString(volatileText.ReplaceAllString(s, "x"), "$1")
	}
	var id atomic.Int64
	f.Fuzz(func(t *testing.T, tool uint8, args string) {
		if !plainArgs(args) {
			return
		}
		name := directTools[int(tool)%len(directTools)]
		// The built-in tools but need_prompt (published or not by the
		// server's options) are Backend.Direct's.
		builtIn := int(tool)%len(directTools) < 3
		body := func(meta string) string {
			return `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id.Add(1), 10) + `,"method":"tools/call","params":{"name":"` +
				name + `","arguments":` + args + meta + `}}`
		}
		before := directs.Load()
		call := body("")
		got, want := answer(maskedAnswer(rawPost(stateful, directSID, call))), answer(maskedAnswer(rawPost(statefulSDK, sdkSID, call)))
		if got != want {
			t.Errorf("stateful %s\n direct: %s\n sdk:    %s", call, got, want)
		}
		call = body(meta)
		got, want = answer(maskedAnswer(statelessPost(stateful, name, call))), answer(maskedAnswer(statelessPost(statelessSDK, name, call)))
		if got != want {
			t.Errorf("stateless %s\n direct: %s\n sdk:    %s", call, got, want)
		}
		if builtIn && directs.Load() != before+2 {
			t.Errorf("Backend.Direct answered %d of the two calls of %s", directs.Load()-before, name)
		}
	})
}

// directAndSDKHandlers are the handlers the direct-answer tests compare,
// all serving h's server: direct answers calls itself (counting those
// Backend.Direct took in directs), statefulSDK leaves a stateful
// session's calls to the SDK, statelessSDK leaves 2026-07-28 calls to it.
func directAndSDKHandlers(tb testing.TB, h *harness) (direct, statefulSDK, statelessSDK http.Handler, directs *atomic.Int64) {
	tb.Helper()
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}}
	b, directs := countingDirect(h.srv.Backend())
	direct, err := transport.HTTPHandlerCounting(b, opts, &atomic.Int64{})
	if err != nil {
		tb.Fatal(err)
	}
	statefulSDK, err = transport.HTTPHandlerSDKOnly(h.srv.Backend(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	sdkBackend := h.srv.Backend()
	sdkBackend.NoParamHeaders, sdkBackend.Direct = false, nil
	statelessSDK, err = transport.HTTPHandler(sdkBackend, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return direct, statefulSDK, statelessSDK, directs
}
