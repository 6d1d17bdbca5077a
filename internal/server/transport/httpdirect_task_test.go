package transport_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A run still going at its reply deadline, for a caller that declared the
// Tasks extension, answers with a CreateTaskResult through Backend.Direct
// on both HTTP paths (statefulCalls, the stateless stand-in sessions) as
// the SDK's handlers answer it: status, headers and bytes, the task's id
// and times blanked.
func TestHTTPDirectTasksAnswerAsTheSDK(t *testing.T) {
	h := heldRunsHarness(t, 4, 100*time.Millisecond, map[string]string{"summarize.md": summarizePrompt})
	direct, statefulSDK, statelessSDK, directs := directAndSDKHandlers(t, h)
	const initTasks = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func(hd http.Handler) string { return openRecordedSessionWith(t, hd, initTasks) }
	blank := func(rec *httptest.ResponseRecorder) string {
		s := maskedAnswer(rec)
		return volatileBytes.ReplaceAllString(volatileText.ReplaceAllString(s, "x"), "$1")
	}
	check := func(path, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: answered\n%s\nthe SDK answers\n%s", path, got, want)
		}
		if !strings.Contains(got, `"resultType":"task"`) {
			t.Errorf("%s: not a task:\n%s", path, got)
		}
	}

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"summarize"}}}`
	before := directs.Load()
	check("stateful", blank(rawPost(direct, open(direct), call)), blank(rawPost(statefulSDK, open(statefulSDK), call)))
	if directs.Load() != before+1 {
		t.Error("Backend.Direct did not answer the stateful call")
	}

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	statelessPost(direct, "list_prompts", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_prompts","arguments":{},`+meta+`}}`)
	call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"summarize"},` + meta + `}}`
	before = directs.Load()
	check("stateless", blank(statelessPost(direct, "run_prompt", call)), blank(statelessPost(statelessSDK, "run_prompt", call)))
	if directs.Load() != before+1 {
		t.Error("Backend.Direct did not answer the stateless call")
	}
}
