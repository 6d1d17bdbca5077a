package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// laneStep is one step of a stdio script: lines to send, then how many
// responses to read (notifications on the way are kept too); wait names a
// gate to wait at before the lines, release one to open after them.
type laneStep struct {
	lines     []string
	responses int
	lane      int // how many of the lines the fast lane should take
	wait      int // 1-based gate to wait for before sending; 0: none
	release   int // 1-based gate to open after sending; 0: none
}

func call(id, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
}

// laneScript is the corpus both paths are run through.
func laneScript() []laneStep {
	echo := func(args string) string {
		return `{"name":"run_prompt","arguments":{"prompt":"echo","args":"` + args + `"}}`
	}
	one := func(line string, lane int) laneStep { return laneStep{lines: []string{line}, responses: 1, lane: lane} }
	return slices.Concat([]laneStep{
		// Before initialize: the SDK refuses it.
		one(call("100", echo("early")), 0),
		one(initializeBody, 0),
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`}},
		// Successes, with every id form.
		one(call("2", echo("hi")), 1),
		one(call(`"s-1"`, echo("string id")), 1),
		one(call(`"a\"b"`, echo("escaped string id")), 1),
		one(call("-5", echo("negative id")), 1),
		one(call("0", echo("zero id")), 1),
		one(call("9007199254740992", echo("2^53")), 1),
		one(call("9007199254740993", echo("2^53+1, refused by the filter")), 0),
		one(call("1180591620717411303424", echo("2^70, refused by the filter")), 0),
		one(call("3", `{ "name" : "run_prompt" , "arguments" : { "prompt" : "echo" , "args" : { "deep" : [1, 2.5, null, true] } } }`), 1),
		one(call("7", echo(`html <b>&amp;</b>, a line separator \u2028 and \u00e9`)), 1),
		one(call("4", `{"name":"list_prompts"}`), 1),
		one(call("5", `{"name":"list_prompts","arguments":{}}`), 1),
		one(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, 0),
		// A tool error result, an unknown tool, invalid arguments and
		// schema violations: the SDK's handler judges them on both paths.
		one(call("10", `{"name":"run_prompt","arguments":{"prompt":"no-such-prompt"}}`), 1),
		one(call("11", `{"name":"no_such_tool","arguments":{}}`), 1),
		one(call("12", `{"name":"run_prompt","arguments":{"prompt":["echo"]}}`), 1),
		one(call("13", `{"name":"run_prompt","arguments":{}}`), 1),
		one(call("14", `{"name":"run_prompt","arguments":{"prompt":"echo","bogus":1}}`), 1),
		one(call("15", `{"name":"run_prompt"}`), 1),
		one(call("16", `{"name":""}`), 1),
	}, argumentShapes(), []laneStep{
		// Not the plain shape: the SDK's path on both sides.
		one(`{"jsonrpc":"2.0","id":20,"method":"tools/call"}`, 0),
		one(call("21", `null`), 0),
		one(call("22", `[]`), 0),
		one(call("23", `"run_prompt"`), 0),
		one(call("24", `{"name":"run_prompt","arguments":null}`), 0),
		one(call("25", `{"name":"run_prompt","arguments":["echo"]}`), 0),
		one(call("26", `{"name":"run_prompt","arguments":{"prompt":"echo"},"extra":1}`), 0),
		one(call("27", `{"Name":"run_prompt","arguments":{"prompt":"echo"}}`), 0),
		one(call("28", `{"name":"run_prompt","Arguments":{"prompt":"echo"}}`), 0),
		one(call("29", `{"n\u0061me":"run_prompt","arguments":{"prompt":"echo"}}`), 0),
		one(call("30", `{"name":"run\u005fprompt","arguments":{"prompt":"echo"}}`), 0),
		one(call("31", `{"name":"run_prompt","name":"list_prompts"}`), 0),
		one(call("32", `{"name":7}`), 0),
		one(call("33", `{"name":"run_prompt","arguments":{"prompt":"echo"},"requestState":"x"}`), 0),
		one(call("34", `{"name":"run_prompt","arguments":{"prompt":"echo"},"_meta":{"progressToken":"q","other":1}}`), 0),
		one(call("35", `{"name":"run_prompt","arguments":{"prompt":"echo"},"_meta":{"progressToken":1.5}}`), 0),
		one(call("36", `{"name":"run_prompt","arguments":{"prompt":"echo"},"_meta":{"progressToken":null}}`), 0),
		// SEP-2575: a per-request protocol version.
		one(call("37", `{"name":"run_prompt","arguments":{"prompt":"echo","args":"new era"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`), 0),
		one(call("38", `{"name":"run_prompt","arguments":{"prompt":"echo"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), 0),
		one(`{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo"}},"extra":true}`, 1),
		// Progress: four notifications, then the result.
		one(call("40", `{"name":"run_prompt","arguments":{"prompt":"trio"},"_meta":{"progressToken":"p"}}`), 1),
		one(call("41", `{"name":"run_prompt","arguments":{"prompt":"trio"},"_meta":{"progressToken":7}}`), 1),
		one(call("42", `{"name":"run_prompt","arguments":{"prompt":"trio"},"_meta":{}}`), 1),
		// Cancellation mid-run: the call is held at the gateway, then
		// cancelled (by a number spelled as a float, as the SDK reads it).
		{lines: []string{call("50", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`)}, lane: 1},
		{wait: 1, lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":50.0,"reason":"user"}}`}, responses: 1},
		// A cancellation for nobody, and one the SDK cannot read.
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`}},
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`}},
		// An id in use while the first is held: the SDK drops the second
		// request unanswered (its error goes out without an id, which
		// makes it a notification), whichever method it names; the first
		// then answers.
		{lines: []string{call("60", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`)}, lane: 1},
		// A ping under another id, answered, shows both were read before
		// the first is let go (else it might end first, freeing its id).
		{wait: 2, lines: []string{call("60", echo("duplicate")), `{"jsonrpc":"2.0","id":60,"method":"ping"}`, `{"jsonrpc":"2.0","id":62,"method":"ping"}`}, responses: 1},
		{release: 2, responses: 1},
		one(call("61", echo("after")), 1),
		// A cancellation whose params the SDK cannot decode (a reason
		// that is not a string) cancels nothing: the held call answers
		// once let go.
		{lines: []string{call("80", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`)}, lane: 1},
		{wait: 3, lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":80,"reason":5}}`, `{"jsonrpc":"2.0","id":81,"method":"ping"}`}, responses: 1},
		{release: 3, responses: 1},
	})
}

// argumentShapes are the argument shapes that matter to the built-in
// tools, each a call of the plain shape (so the lane's, answered directly
// by the server or through the chain): valid, missing, of the wrong type,
// extra, null, escaped or repeated keys, huge strings with every escape
// class, tool errors, and a tool the table does not hold.
func argumentShapes() []laneStep {
	one := func(id, params string) laneStep {
		return laneStep{lines: []string{call(id, params)}, responses: 1, lane: 1}
	}
	run := func(id, args string) laneStep { return one(id, `{"name":"run_prompt","arguments":`+args+`}`) }
	// Huge strings (within the 4 MiB line): HTML characters, a raw line
	// separator, multi-byte UTF-8, escapes and control characters.
	huge := strings.Repeat("<a href='x'>&amp;</a> \u2028 é 🙂 "+`\"q\" \\ \n\t\u0001 \u2029 \/ `, 4000)
	return []laneStep{
		run("200", `{"prompt":"echo","args":"`+huge+`"}`),
		run("201", `{"prompt":"`+strings.Repeat("no-such-", 20000)+`"}`),
		run("202", `{"prompt":"echo","args":"`+strings.Repeat("x", 1<<20)+`"}`),
		// Wrong types, null values and the mutually exclusive pair.
		run("210", `{"prompt":"echo","args":5}`),
		run("211", `{"prompt":"echo","args":null}`),
		run("212", `{"prompt":null}`),
		run("213", `{"prompt":"echo","arguments":"x"}`),
		run("214", `{"prompt":"echo","arguments":null}`),
		run("215", `{"prompt":"echo","arguments":{"a":1}}`),
		run("216", `{"prompt":"echo","input_text":true}`),
		run("217", `{"prompt":"echo","input_text":"a","input_file":"b"}`),
		run("218", `{"prompt":"echo","output_file":3}`),
		run("219", `{"prompt":"echo","input_file":"","args":"an empty input_file"}`),
		// Keys: escaped, repeated, extra (the first in byte order named),
		// and whitespace everywhere.
		run("220", `{"pr\u006fmpt":"echo","args":"escaped key"}`),
		run("221", `{"prompt":"trio","prompt":"echo","args":"repeated key"}`),
		run("222", `{"zeta":1,"prompt":"echo","alpha":2}`),
		run("223", "{ \"prompt\" :\t\"echo\" ,  \"args\" : \"spaced\" }"),
		run("224", `{"prompt":"echo","args":"\ud800 lone surrogate, \u0000 nul"}`),
		// list_prompts: cursors of every kind, extra keys.
		one("230", `{"name":"list_prompts","arguments":{"cursor":""}}`),
		one("231", `{"name":"list_prompts","arguments":{"cursor":"1"}}`),
		one("232", `{"name":"list_prompts","arguments":{"cursor":"999"}}`),
		one("233", `{"name":"list_prompts","arguments":{"cursor":"abc"}}`),
		one("234", `{"name":"list_prompts","arguments":{"cursor":5}}`),
		one("235", `{"name":"list_prompts","arguments":{"cursor":null}}`),
		one("236", `{"name":"list_prompts","arguments":{"x":1}}`),
		// check_run: an unknown run (a tool error), missing and mistyped
		// arguments, include_trace.
		one("240", `{"name":"check_run","arguments":{"run_id":"0123456789abcdef0123456789abcdef"}}`),
		one("241", `{"name":"check_run","arguments":{"run_id":"<x>&","include_trace":true}}`),
		one("242", `{"name":"check_run","arguments":{}}`),
		one("243", `{"name":"check_run"}`),
		one("244", `{"name":"check_run","arguments":{"run_id":7}}`),
		one("245", `{"name":"check_run","arguments":{"run_id":"r","include_trace":"yes"}}`),
		one("246", `{"name":"check_run","arguments":{"run_id":"r","bogus":true}}`),
		// need_prompt, published only with retrieval (this catalog has
		// none: an unknown tool, answered by the SDK's chain), and a
		// prompt's name, which is no tool here.
		one("250", `{"name":"need_prompt","arguments":{"capability":"echo"}}`),
		one("251", `{"name":"echo","arguments":{}}`),
		one("252", `{"name":"`+strings.Repeat("t", 70000)+`","arguments":{}}`),
	}
}

// initializeTasks is initializeBody from a client that declares the Tasks
// extension, whose long runs are answered with a task.
const initializeTasks = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"raw","version":"1"}}}`

// laneScriptRunning is a session whose reply deadline (set by the test)
// passes while the model turn is held at a gate: the call is answered
// running, or with a task. init is the initialize line.
func laneScriptRunning(init string) []laneStep {
	one := func(line string, lane int) laneStep { return laneStep{lines: []string{line}, responses: 1, lane: lane} }
	return []laneStep{
		one(init, 0),
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`}},
		one(call("2", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`), 1),
		{wait: 1, release: 1},
		// No progress token here: whether the run's first frames beat a
		// 1 ms deadline is the scheduler's to say, on either path.
		one(call(`"s-3"`, `{"name":"run_prompt","arguments":{"prompt":"summarize","args":"<&>"}}`), 1),
		{wait: 2, release: 2},
	}
}

// newEraMeta is the _meta of a 2026-07-28 call (SEP-2575) with extra
// members, as a go-sdk v1.8.0 client sends it by default: its version,
// capabilities and client info.
func newEraMeta(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"client","version":"v1.8.0"}` + extra + `}`
}

// laneScriptNewEra is the corpus of a 2026-07-28 session over stdio: no
// initialize, every request carrying its version in _meta.
func laneScriptNewEra() []laneStep {
	one := func(line string, lane int) laneStep { return laneStep{lines: []string{line}, responses: 1, lane: lane} }
	echo := func(id, args, meta string) string {
		return call(id, `{"name":"run_prompt","arguments":{"prompt":"echo","args":"`+args+`"},`+meta+`}`)
	}
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	bare := func(version string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":` + version + `,` + caps + `}`
	}
	return []laneStep{
		// Before the SDK has answered a 2026-07-28 call: its own.
		one(echo("1", "unsupported version", bare(`"2099-01-01"`)), 0),
		one(echo("2", "an old version in _meta, no initialize", bare(`"2025-11-25"`)), 0),
		one(echo("3", "first", newEraMeta("")), 0),
		// The SDK has answered one with a result: the lane's from now on.
		one(echo("4", "second", newEraMeta("")), 1),
		one(echo("5", "bare", bare(`"2026-07-28"`)), 1),
		one(echo(`"s-6"`, "members in another order", `"_meta":{`+caps+`,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","title":"T","extra":[1,{"x":null}]},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), 1),
		one(echo("7", "capabilities the SDK knows", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{"tools":{}},"roots":{},"experimental":{"x":{"y":1}},"extensions":{"io.x/y":{}},"unknown":5}}`), 1),
		one(call("8", `{"name":"list_prompts",`+newEraMeta("")+`}`), 1),
		one(call("9", `{"name":"run_prompt","arguments":{"prompt":"trio"},`+newEraMeta(`,"progressToken":"p"`)+`}`), 1),
		one(call("10", `{"name":"run_prompt","arguments":{"prompt":"trio"},`+newEraMeta(`,"progressToken":7`)+`}`), 1),
		// Errors and tool errors: the SDK's handler judges them on both
		// paths; a tool error result is annotated, an error is not.
		one(call("11", `{"name":"run_prompt","arguments":{"prompt":"no-such-prompt"},`+newEraMeta("")+`}`), 1),
		one(call("12", `{"name":"no_such_tool","arguments":{},`+newEraMeta("")+`}`), 1),
		one(call("13", `{"name":"run_prompt","arguments":{"prompt":["echo"]},`+newEraMeta("")+`}`), 1),
		// What validateRequestMeta refuses or judges otherwise: the SDK's.
		one(echo("20", "unsupported later version", bare(`"2026-12-01"`)), 0),
		one(echo("21", "version not a string", bare(`20260728`)), 0),
		one(echo("22", "version escaped", bare(`"\u0032026-07-28"`)), 0),
		one(echo("23", "no capabilities", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), 0),
		one(echo("24", "null capabilities", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`), 0),
		one(echo("25", "capabilities not an object", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`), 0),
		one(echo("26", "malformed capabilities", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}}`), 0),
		one(echo("27", "malformed clientInfo", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+caps+`,"io.modelcontextprotocol/clientInfo":{"name":5}}`), 0),
		one(echo("28", "null clientInfo", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+caps+`,"io.modelcontextprotocol/clientInfo":null}`), 0),
		one(echo("29", "clientInfo a string", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+caps+`,"io.modelcontextprotocol/clientInfo":"c"}`), 0),
		one(echo("30", "a log level", newEraMeta(`,"io.modelcontextprotocol/logLevel":"debug"`)), 0),
		one(echo("31", "an unknown member", newEraMeta(`,"x":1`)), 0),
		one(echo("32", "a repeated member", newEraMeta(`,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`)), 0),
		one(echo("33", "a float progress token", newEraMeta(`,"progressToken":1.5`)), 0),
		one(echo("34", "an escaped member name", `"_meta":{"io.modelcontextprotocol/protocolVersio\u006e":"2026-07-28",`+caps+`}`), 0),
		one(call("35", `{"name":"run_prompt","arguments":{"prompt":"echo"},`+newEraMeta("")+`,"_meta":{}}`), 0),
		one(call("36", `{"name":"run_prompt","arguments":{"prompt":"echo"},"requestState":"x",`+newEraMeta("")+`}`), 0),
		// A call without _meta in this session, and methods other than
		// tools/call: the SDK's.
		one(call("37", `{"name":"run_prompt","arguments":{"prompt":"echo","args":"no meta"}}`), 0),
		one(`{"jsonrpc":"2.0","id":38,"method":"server/discover","params":{`+newEraMeta("")+`}}`, 0),
		one(`{"jsonrpc":"2.0","id":39,"method":"tools/list","params":{`+newEraMeta("")+`}}`, 0),
		one(`{"jsonrpc":"2.0","id":40,"method":"ping","params":{`+newEraMeta("")+`}}`, 0),
		// Cancellation mid-run.
		{lines: []string{call("50", `{"name":"run_prompt","arguments":{"prompt":"summarize"},`+newEraMeta("")+`}`)}, lane: 1},
		{wait: 1, lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":50,"reason":"user"}}`}, responses: 1},
		// An id in use while the first is held.
		{lines: []string{call("60", `{"name":"run_prompt","arguments":{"prompt":"summarize"},`+newEraMeta("")+`}`)}, lane: 1},
		{wait: 2, lines: []string{echo("60", "duplicate", newEraMeta("")), `{"jsonrpc":"2.0","id":62,"method":"ping"}`}, responses: 1},
		{release: 2, responses: 1},
		one(echo("61", "after", newEraMeta("")), 1),
		// Once a log level has been set (here refused, as 2026-07-28 has
		// no logging/setLevel), the SDK's for good.
		one(`{"jsonrpc":"2.0","id":70,"method":"logging/setLevel","params":{"level":"debug",`+newEraMeta("")+`}}`, 0),
		one(echo("71", "after a setLevel", newEraMeta("")), 0),
	}
}

// runLane serves the script on a fresh server with the lane on or off and
// returns every message written, in order, and how many calls the lane
// took.
func runLane(t *testing.T, script []laneStep, mode laneMode, limits server.Limits) (msgs []any, raw []string, taken int64) {
	t.Helper()
	on := mode != sdkPath
	g, c := tcpGateway(t)
	gates := []*gatewaytest.Gate{gatewaytest.NewGate(), gatewaytest.NewGate(), gatewaytest.NewGate()}
	g.Enqueue(gatewaytest.Gated(gates[0], gatewaytest.Text("cancelled")), gatewaytest.Gated(gates[1], gatewaytest.Text("summary")),
		gatewaytest.Gated(gates[2], gatewaytest.Text("not cancelled")))
	for _, gate := range gates {
		defer gate.Release()
	}
	prompts := map[string]string{"trio.md": trioPrompt, "echo.md": echoPrompt, "summarize.md": summarizePrompt}
	h := newHarness(t, fixture{prompts: prompts, opts: withGateway(c), limits: limits})
	b := h.srv.Backend()
	if mode == laneChain {
		b.Direct = nil
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var lane atomic.Int64
	served := make(chan error, 1)
	go func() {
		served <- transport.ServeStdioLane(context.Background(), inR, outW, b, 10*time.Second, on, &lane)
		outW.Close()
	}()
	lines := readLines(outR)
	var want int64
	for i, st := range script {
		if st.wait > 0 {
			arrived(t, gates[st.wait-1])
		}
		for _, l := range st.lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		if st.release > 0 {
			gates[st.release-1].Release()
		}
		for n := 0; n < st.responses; {
			var line string
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("step %d: stdout ended", i)
				}
				line = l
			case <-time.After(30 * time.Second):
				t.Fatalf("step %d (%q): no reply", i, st.lines)
			}
			// Run ids in texts and a task's times differ between any two
			// runs; blanked alike on both paths.
			line = volatileTTL.ReplaceAllString(volatileText.ReplaceAllString(line, "x"), `"ttlMs":0`)
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("step %d: reply %q: %v", i, line, err)
			}
			if _, isNote := m["method"]; !isNote {
				n++
			}
			volatile(m)
			msgs = append(msgs, m)
			raw = append(raw, volatileBytes.ReplaceAllString(line, "$1"))
		}
		// Which lines the lane took: every line of a step with a reply
		// has been read by the time the reply comes.
		want += int64(st.lane)
		if on && st.responses > 0 && lane.Load() != want {
			t.Errorf("step %d (%.120q): the lane has taken %d calls, want %d", i, st.lines, lane.Load(), want)
			want = lane.Load()
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	for l := range lines {
		t.Errorf("an unexpected message after the script: %s", l)
	}
	return msgs, raw, lane.Load()
}

// volatileBytes matches a run's id and duration in a raw reply, in the
// record and in its text (escaped), and a task's id and times, keeping
// the member's name.
var volatileBytes = regexp.MustCompile(`(\\?"(?:run_id|elapsed_ms|taskId|createdAt|lastUpdatedAt|ttlMs)\\?":)(?:\\?"[0-9a-zA-Z:.+-]+\\?"|[0-9]+)`)

// volatileText matches a run id wherever it is spelt (a running run's
// text, a task's status message) and a task's times.
var (
	volatileText = regexp.MustCompile(`\b[0-9a-f]{32}\b|\d{4}-\d\d-\d\dT[0-9:.]+Z`)
	volatileTTL  = regexp.MustCompile(`"ttlMs":\d+`)
)

// laneMode is which path a script's calls take.
type laneMode int

const (
	sdkPath    laneMode = iota // every message through the SDK
	laneChain                  // the lane, each call through the server's receiving chain
	laneDirect                 // the lane, the built-in tools answered by Backend.Direct
)

// TestStdioFastLaneMatchesTheSDK runs one corpus of lines through the fast
// lane and through the SDK's own path and requires the same replies and
// notifications, message by message, as JSON values and byte for byte;
// and that the lane took exactly the calls of the plain shape: for a
// 2025-era session (initialize first) and a 2026-07-28 one (_meta).
//
// Each corpus runs through the lane twice: with the server's direct
// answer (Backend.Direct, AnswerCall), as served, and without it, each
// call through the server's receiving chain.
func TestStdioFastLaneMatchesTheSDK(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode laneMode
	}{{"direct", laneDirect}, {"chain", laneChain}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("2025", func(t *testing.T) { laneMatchesSDK(t, laneScript(), mode.mode, defaultLimits()) })
			t.Run("2026-07-28", func(t *testing.T) { laneMatchesSDK(t, laneScriptNewEra(), mode.mode, defaultLimits()) })
			// A reply deadline far shorter than a model turn held at
			// its gate: the run answers running (or, for a client that
			// declared the Tasks extension, with a task) whatever the
			// machine's speed.
			short := defaultLimits()
			short.ReplyDeadline = time.Millisecond
			t.Run("running", func(t *testing.T) { laneMatchesSDK(t, laneScriptRunning(initializeBody), mode.mode, short) })
			t.Run("task", func(t *testing.T) { laneMatchesSDK(t, laneScriptRunning(initializeTasks), mode.mode, short) })
		})
	}
}

func laneMatchesSDK(t *testing.T, script []laneStep, mode laneMode, limits server.Limits) {
	want := 0
	for _, st := range script {
		want += st.lane
	}
	sdk, sdkRaw, sdkTaken := runLane(t, script, sdkPath, limits)
	lane, laneRaw, laneTaken := runLane(t, script, mode, limits)
	if sdkTaken != 0 || laneTaken != int64(want) {
		t.Errorf("the lane took %d calls with the lane off and %d with it on, want 0 and %d", sdkTaken, laneTaken, want)
	}
	for i := range max(len(sdk), len(lane)) {
		var s, l any
		if i < len(sdk) {
			s = sdk[i]
		}
		if i < len(lane) {
			l = lane[i]
		}
		if !reflect.DeepEqual(s, l) {
			t.Errorf("message %d differs:\n sdk:  %s\n lane: %s", i, jsonOf(s), jsonOf(l))
		} else if sdkRaw[i] != laneRaw[i] {
			// The same value, spelled otherwise (escapes, member order).
			t.Errorf("message %d is spelled differently:\n sdk:  %s lane: %s", i, sdkRaw[i], laneRaw[i])
		}
	}
	if t.Failed() {
		var all strings.Builder
		for i, m := range sdk {
			fmt.Fprintf(&all, "%d %s\n", i, jsonOf(m))
		}
		t.Logf("the SDK's messages:\n%s", all.String())
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// volatile blanks what differs between any two runs: a run's id and how
// long it took.
func volatile(m map[string]any) {
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	for _, k := range []string{"run_id", "elapsed_ms"} {
		if _, ok := sc[k]; ok {
			sc[k] = k
		}
	}
	if sc == nil {
		return
	}
	// The text block of a run's result repeats its record.
	content, _ := res["content"].([]any)
	for _, c := range content {
		if block, ok := c.(map[string]any); ok {
			if text, ok := block["text"].(string); ok && strings.Contains(text, `"run_id"`) {
				block["text"] = "record"
			}
		}
	}
}

// laneSession serves one stdio session with the lane on, answers its
// initialize (so the lane opens), and returns the peer's ends.
type laneSession struct {
	in     *io.PipeWriter
	lines  <-chan string
	served chan error
	taken  *atomic.Int64
}

func newLaneSession(t *testing.T, ctx context.Context, b transport.Backend) *laneSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &laneSession{in: inW, lines: readLines(outR), served: make(chan error, 1), taken: new(atomic.Int64)}
	go func() {
		s.served <- transport.ServeStdioLane(ctx, inR, outW, b, 30*time.Second, true, s.taken)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	s.send(t, initializeBody)
	if m := s.recv(t); m["id"] != float64(1) {
		t.Fatalf("initialize: %v", m)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *laneSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *laneSession) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			t.Fatal("stdout ended")
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Errorf("not JSON: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no reply")
	}
	return nil
}

// The end of input waits for the lane's calls in flight, as for the SDK's
// (B8): both replies are written before ServeStdio returns.
func TestStdioFastLaneDrainsAtEOF(t *testing.T) {
	h, gate := gatedHarness(t, "summary")
	s := newLaneSession(t, context.Background(), h.srv.Backend())
	s.send(t, call("3", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`))
	s.send(t, call("2", `{"name":"run_prompt","arguments":{"prompt":"echo","args":"hi"}}`))
	s.in.Close()
	arrived(t, gate)
	if m := s.recv(t); m["id"] != float64(2) {
		t.Fatalf("first reply: %v", m)
	}
	gate.Release()
	if m := s.recv(t); m["id"] != float64(3) || valueOf(m) != "summary" {
		t.Fatalf("the held call's reply: %v", m)
	}
	if err := <-s.served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if got := s.taken.Load(); got != 2 {
		t.Errorf("the lane took %d calls, want 2", got)
	}
}

// A shutdown signal drains the lane's calls in flight: the held call's
// reply is written before ServeStdio returns.
func TestStdioFastLaneDrainsAtShutdown(t *testing.T) {
	h, gate := gatedHarness(t, "summary")
	b := h.srv.Backend()
	draining := make(chan struct{})
	b.Logger = slog.New(onMessage{"shutdown signal received; draining", draining})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newLaneSession(t, ctx, b)
	s.send(t, call("3", `{"name":"run_prompt","arguments":{"prompt":"summarize"}}`))
	arrived(t, gate)
	cancel()
	<-draining
	gate.Release()
	if m := s.recv(t); m["id"] != float64(3) || valueOf(m) != "summary" {
		t.Fatalf("the held call's reply: %v", m)
	}
	s.in.Close()
	if err := <-s.served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if got := s.taken.Load(); got != 1 {
		t.Errorf("the lane took %d calls, want 1", got)
	}
}

// onMessage is a slog handler closing ch at the first record whose
// message is msg.
type onMessage struct {
	msg string
	ch  chan struct{}
}

func (onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (o onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == o.msg {
		close(o.ch)
	}
	return nil
}
func (o onMessage) WithAttrs([]slog.Attr) slog.Handler { return o }
func (o onMessage) WithGroup(string) slog.Handler      { return o }

// valueOf is the value of a run_prompt reply.
func valueOf(m map[string]any) any {
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	return sc["value"]
}

// arrived waits for the first request at gate.
func arrived(t *testing.T, gate *gatewaytest.Gate) {
	t.Helper()
	select {
	case <-gate.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("the held call never reached the gateway")
	}
}

// gatedHarness is the default fixture against a gateway whose one reply,
// text, is held at the returned gate until the test releases it (or ends).
func gatedHarness(t *testing.T, text string) (*harness, *gatewaytest.Gate) {
	t.Helper()
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text(text)))
	h := newHarness(t, fixture{opts: withGateway(c)})
	t.Cleanup(gate.Release) // before the harness's close, which waits for the run
	return h, gate
}

// brokenOut passes writes to w until broken is set, then fails them all,
// as a stdout whose reader has gone (or whose disk is full) does.
type brokenOut struct {
	w      io.Writer
	broken atomic.Bool
}

func (b *brokenOut) Write(p []byte) (int, error) {
	if b.broken.Load() {
		return 0, io.ErrClosedPipe
	}
	return b.w.Write(p)
}

// A failed write of a reply ends the session with the lane on as with it
// off: the SDK, after a write of its own fails, cancels the requests it
// has in flight and closes the connection once they have returned, so
// ServeStdio returns though stdin stays open. Here the failed write is
// the reply to a call the lane takes, and a call of the SDK's is held at
// the gateway meanwhile: it must be cancelled, not left running.
func TestStdioAFailedReplyWriteEndsTheSession(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("lane %v", on), func(t *testing.T) {
			h, gate := gatedHarness(t, "summary")
			inR, inW := io.Pipe()
			defer inW.Close()
			outR, outW := io.Pipe()
			out := &brokenOut{w: outW}
			var taken atomic.Int64
			served := make(chan error, 1)
			go func() {
				served <- transport.ServeStdioLane(context.Background(), inR, out, h.srv.Backend(), 30*time.Second, on, &taken)
				outW.Close()
			}()
			go io.Copy(io.Discard, outR)
			send := func(line string) {
				t.Helper()
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			send(initializeBody)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			// Not the plain shape (a _meta member besides progressToken):
			// the SDK's. No progress token, so no heartbeat write tells
			// the SDK that stdout is gone.
			send(call("2", `{"name":"run_prompt","arguments":{"prompt":"summarize"},"_meta":{"other":1}}`))
			arrived(t, gate)
			out.broken.Store(true)
			send(call("3", `{"name":"run_prompt","arguments":{"prompt":"echo","args":"hi"}}`))
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("ServeStdio still serving after a reply could not be written, its held call not cancelled")
			}
			if want := map[bool]int64{false: 0, true: 1}[on]; taken.Load() != want {
				t.Errorf("the lane took %d calls, want %d", taken.Load(), want)
			}
		})
	}
}
