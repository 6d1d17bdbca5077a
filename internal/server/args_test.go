package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestOptionalString(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    string
		wantErr bool
	}{
		{`{"args":"x"}`, "x", false},
		{`{}`, "", false},
		{``, "", false},
		{`null`, "", false},
		{`{"args":null}`, "", true},
		{`{"args":1}`, "", true},
		{`{"args":{"a":1}}`, "", true},
	} {
		a, err := parseArguments("t", json.RawMessage(tc.raw), []string{"args"})
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		got, err := a.optional("args")
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: got %q, %v", tc.raw, got, err)
		}
		if err != nil {
			if we, ok := err.(*jsonrpc.Error); !ok || we.Code != jsonrpc.CodeInvalidParams || we.Message != "args must be a string" {
				t.Errorf("%s: error %v", tc.raw, err)
			}
		}
	}
}

func TestCursor(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 0, false}, {"100", 100, false}, {"0", 0, false},
		{"garbage", 0, true}, {"-1", 0, true}, {"+1", 0, true}, {" 1", 0, true}, {"1e3", 0, true},
		{"99999999999999999999", 0, true},
	} {
		got, err := parseCursor(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: %d, %v", tc.in, got, err)
		}
	}
}

func TestTerminalLogCarriesTheRecordNotTheValue(t *testing.T) {
	log := &levelLog{}
	h := newHarness(t, fixture{opts: func(o *Options) { o.Logger = slogOf(log) }})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "the-secret-value"})
	id := structuredOf(t, res)["run_id"].(string)
	var terminal []string
	for _, line := range log.lines() {
		if strings.Contains(line, "the-secret-value") {
			t.Errorf("a log line carries the value: %q", line)
		}
		if strings.Contains(line, "run reached its terminal state") {
			terminal = append(terminal, line)
		}
	}
	if len(terminal) != 1 {
		t.Fatalf("terminal lines %q", terminal)
	}
	for _, want := range []string{"INFO ", "run_id=" + id, "prompt=echo", "status=completed", "turns=0", "elapsed_ms="} {
		if !strings.Contains(terminal[0], want) {
			t.Errorf("terminal line %q lacks %q", terminal[0], want)
		}
	}
}

func TestRefusalNamesTheWaitInPromptsTomlSpelling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, fixture{limits: Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 30 * time.Second, ReplyDeadline: time.Minute, RetainCompleted: time.Hour}})
		slot, err := h.srv.Registry().Admit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer slot.Release()
		text := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo"}))
		if !strings.Contains(text, "within 30s") {
			t.Fatalf("refusal %q", text)
		}
	})
}

// TestStringValueIsUnmarshal: the fast path for plain strings gives what
// json.Unmarshal gives, and leaves every other spelling to it.
func TestStringValueIsUnmarshal(t *testing.T) {
	for _, raw := range []string{`""`, `"echo"`, `"hello world"`, `"é 🙂"`, `"a\"b"`, `"a\\b"`, `"line\nbreak"`,
		`"\u00e9"`, "\"bad\xffutf8\"", `"<&>"`, ` "padded" `, `"tab	inside"`, `"x"y"`, `"`, `x"`, `"unterminated`} {
		var want string
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, err := stringValue("k", json.RawMessage(raw))
		if (err != nil) != (wantErr != nil) || got != want {
			t.Errorf("stringValue(%s) = %q, %v; json.Unmarshal gives %q, %v", raw, got, err, want, wantErr)
		}
	}
}

// TestPlainStringTakesOnlyWholePlainStrings: the fast path itself takes
// the plain spellings and leaves escapes, invalid UTF-8 and anything that
// is not one whole string to json.Unmarshal.
func TestPlainStringTakesOnlyWholePlainStrings(t *testing.T) {
	for raw, want := range map[string]bool{`""`: true, `"echo"`: true, `"é 🙂"`: true, `"<&>"`: true,
		`"a\"b"`: false, `"line\nbreak"`: false, "\"bad\xffutf8\"": false, "\"tab\tinside\"": false,
		` "padded" `: false, `"x"y"`: false, `"`: false, `x"`: false, `"unterminated`: false} {
		got, ok := plainString([]byte(raw))
		if ok != want || (ok && got != raw[1:len(raw)-1]) {
			t.Errorf("plainString(%s) = %q, %v; want ok %v", raw, got, ok, want)
		}
	}
}

// FuzzFlatArguments holds parseArguments' fast path to json.Unmarshal:
// whatever flatArguments accepts, json.Unmarshal accepts and decodes to
// the same keys and value bytes.
func FuzzFlatArguments(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"echo","args":"hello"}`, `{}`, ` { } `, `{"a":true,"b":false,"c":null}`,
		"{ \"a\" :\t\"x\" ,\n\"a\" : \"y\" }", `{"a":"é <>&"}`, `{"a":"\u00e9"}`, `{"a":"x"`, `{"a":"x"}}`,
		`{"a":1}`, `{"a":tru}`, `{"a":"x",}`, `{"a\u0062":"x"}`, "{\"\xff\":\"x\"}", "{\"a\":\"\xff\"}", `{"a":nullx}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := flatArguments([]byte(raw))
		if !ok {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("flatArguments accepted %q, which json.Unmarshal refuses: %v", raw, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: flatArguments %v, json.Unmarshal %v", raw, got, want)
		}
		for k, v := range want {
			if g, _ := got.get(k); string(g) != string(v) {
				t.Fatalf("%q: key %q: flatArguments %q, json.Unmarshal %q", raw, k, g, v)
			}
		}
	})
}

// A run_prompt call's usual arguments decode in one allocation, and a
// repeated key keeps its last value, as json.Unmarshal into a map does
// (issue #12: the map, its group and a string per key were four).
func TestFlatArgumentsAllocateOnceAndKeepTheLastValue(t *testing.T) {
	raw := json.RawMessage(`{"prompt":"echo","args":"hello"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := parseArguments(ToolRunPrompt, raw, runPromptKeys); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("parseArguments allocated %v times; want 1", allocs)
	}
	a, err := parseArguments(ToolRunPrompt, json.RawMessage(`{"prompt":"a","args":"x","prompt":"b"}`), runPromptKeys)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.optional("prompt"); got != "b" || len(a) != 2 {
		t.Errorf("a repeated key: prompt %q among %d members; want \"b\" among 2", got, len(a))
	}
}

// An arguments object of many members is decoded in linear time, as the
// map json.Unmarshal fills: flatArguments, whose member search is
// quadratic, leaves one of more than maxFlatMembers to it; such an object
// is still read whole, its unknown keys named as before, and a repeated
// key keeps its last value.
func TestManyArgumentsAreNotSearchedQuadratically(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"prompt":"a"`)
	for i := range 4 * maxFlatMembers {
		fmt.Fprintf(&b, `,"k%03d":null`, i)
	}
	b.WriteString(`,"prompt":"b"}`)
	raw := []byte(b.String())
	if _, ok := flatArguments(raw); ok {
		t.Errorf("flatArguments decoded %d members itself; want more than %d left to json.Unmarshal", 4*maxFlatMembers+1, maxFlatMembers)
	}
	_, err := parseArguments(ToolRunPrompt, raw, runPromptKeys)
	if err == nil || !strings.Contains(err.Error(), `takes no argument "k000"`) {
		t.Errorf("parseArguments: %v; want k000 named as unknown", err)
	}
	keys := []string{"prompt"}
	for i := range 4 * maxFlatMembers {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	a, err := parseArguments(ToolRunPrompt, raw, keys)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.optional("prompt"); got != "b" || len(a) != 4*maxFlatMembers+1 {
		t.Errorf("prompt %q among %d members; want \"b\" among %d", got, len(a), 4*maxFlatMembers+1)
	}
}
