package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRawScan holds the in-place reads of scan.go to what encoding/json
// reads on every valid JSON value (a map of raw members, a slice of raw
// elements, a string), and to no panic on anything.
func FuzzRawScan(f *testing.F) {
	for _, seed := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}`,
		` { "a" : [ 1 , {"b":"]"} ] , "c" : "x\"y" , "a" : null } `,
		`{"k\u0065y":1,"key":2}`, `{"a":"caf\u00e9","b":"line\nbreak"}`, "{\"\xff\":1,\"s\":\"\xfe\"}",
		`[]`, `[ ]`, `[1,"2",[3],{"4":4},null,true]`, `{}`, `null`, `"plain"`, `"esc\u0041ped"`, "\"\xc3\x28\"",
		`{"a":1`, `[1,`, `"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, okObject := scanObject(raw)
		a, okArray := scanArray(raw)
		s, okString := plainString(raw)
		if !json.Valid(raw) {
			return
		}
		if okObject {
			var want map[string]json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || len(want) != len(m) {
				t.Fatalf("scanObject(%s) = %q, encoding/json reads %q (%v)", raw, m, want, err)
			}
			for k, v := range want {
				if got, ok := m[k]; !ok || !bytes.Equal(got, v) {
					t.Fatalf("scanObject(%s)[%q] = %q, encoding/json reads %q", raw, k, got, v)
				}
			}
		}
		if okArray {
			var want []json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || len(want) != len(a) {
				t.Fatalf("scanArray(%s) = %q, encoding/json reads %q (%v)", raw, a, want, err)
			}
			for i := range want {
				if !bytes.Equal(a[i], want[i]) {
					t.Fatalf("scanArray(%s)[%d] = %q, encoding/json reads %q", raw, i, a[i], want[i])
				}
			}
		}
		if okString {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || s != want {
				t.Fatalf("plainString(%s) = %q, encoding/json reads %q (%v)", raw, s, want, err)
			}
		}
	})
}

// TestParseChatAllocations holds a plain reply's parse to its in-place
// reads: 73 allocations when encoding/json read it five times over, 10
// with them (the maps of members, the strings, the completion).
func TestParseChatAllocations(t *testing.T) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if comp, err := parseChat(body, ChatRequest{}); err != nil || comp.Text != "The capital of France is Paris." {
			t.Fatalf("parseChat = %+v, %v", comp, err)
		}
	})
	t.Logf("parseChat of a plain reply: %.0f allocations", allocs)
	if allocs > 15 {
		t.Errorf("parseChat of a plain reply made %.0f allocations, want at most 15: the reply is read in place (scan.go)", allocs)
	}
}

// BenchmarkParseChat is the per-turn cost of reading a plain reply.
func BenchmarkParseChat(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`)
	b.ReportAllocs()
	for b.Loop() {
		if comp, err := parseChat(body, ChatRequest{}); err != nil || comp.Text == "" {
			b.Fatalf("parseChat = %+v, %v", comp, err)
		}
	}
}
