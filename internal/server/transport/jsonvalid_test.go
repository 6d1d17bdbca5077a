package transport

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are lines at the edges of JSON's grammar; each must get
// json.Valid's verdict.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{`, `}`, `[`, `]`, `{]`, `[}`, `{"a":1}`, `{"a":1,}`, `{"a" : [1, 2 ,3] }`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1,]`, `[,1]`, `[1 2]`, `"x"`, `"x`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`,
	`"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"", `true`, `tru`, `truex`,
	`false`, `null`, `nul`, `nullnull`, `0`, `-0`, `01`, `-`, `-a`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`,
	`-1.5e10`, `1.5.5`, `[1]x`, `{} {}`, "{}\t\r\n", "\v{}", `[[[]]]`, `[[[]]`, `{"a":{"b":{"c":[{}]}}}`, `{"a":"b"]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"hello"}}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	strings.Repeat("[", 64) + strings.Repeat("]", 64), `[{"a":[{"b":[]}]}]`, `[{"a":[{"b":[]}]]]`, `[{"a":[{"b":[]}}]}`,
}

func TestValidJSONIsJSONValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid %v", c, got, want)
		}
	}
}

// FuzzValidJSON holds validJSON to json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
