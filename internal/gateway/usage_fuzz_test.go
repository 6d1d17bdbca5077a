package gateway

import (
	"encoding/json"
	"testing"
)

// FuzzParseUsage holds the in-place scan to what encoding/json reads
// (decodeUsage) on every valid JSON value, and to no panic on anything.
func FuzzParseUsage(f *testing.F) {
	for _, seed := range []string{
		`{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`,
		`{"prompt_tokens":40,"total_tokens":52,"completion_tokens":12,"prompt_tokens_details":null}`,
		` { "completion_tokens" : 12 , "prompt_tokens" : 40 } `,
		`{"prompt_tokens":"40","completion_tokens":-1}`,
		`{"prompt_tokens":4e1,"completion_tokens":12.0}`,
		`{"prompt_tokens":99999999999999999999999,"completion_tokens":9223372036854775807}`,
		`{"x":{"prompt_tokens":1},"y":["}",{"a":"\"]"}],"prompt_tokens":2}`,
		`{"prompt\u005ftokens":7,"completion_tokens":1}`,
		`{"prompt_tokens":1,"prompt_tokens":2}`,
		`{"a\"b":1,"completion_tokens":3}`,
		`{}`, `null`, `[]`, `"usage"`, `{"prompt_tokens":`, `{"prompt_tokens"`, `{"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := parseUsage(raw)
		if !json.Valid(raw) {
			return
		}
		if want := decodeUsage(raw); got != want {
			t.Fatalf("parseUsage(%s) = %+v, encoding/json reads %+v", raw, got, want)
		}
	})
}

// BenchmarkParseUsage is the per-turn cost of reading OpenAI's usage object,
// the longest the recorded servers send; it allocates nothing.
func BenchmarkParseUsage(b *testing.B) {
	raw := []byte(`{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52,` +
		`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`)
	b.ReportAllocs()
	for b.Loop() {
		if parseUsage(raw) != (Usage{PromptTokens: 40, CompletionTokens: 12}) {
			b.Fatal("parseUsage misread the usage")
		}
	}
}
