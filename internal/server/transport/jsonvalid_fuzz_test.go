package transport

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValidJSON holds validJSON to json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `[ ]`, `{ }`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`,
		`1E+5`, `1e-`, `-1.5e-7`, `.5`, `"\u00e9"`, `"\u00G9"`, `"\x"`, `"a` + "\x01" + `"`, `"` + "\xff" + `"`, `"\/\b\f\n\r\t\"\\"`,
		`{"a":1,"b":[1,2,{"c":null}]}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{1:2}`, `[1 2]`, `{"a":1}}`, `[[]]]`, ` [ "x" , { } ] `,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), "\t\n\r 1 \r\n\t", "1 2", `"\u12"`, `"\u1234"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
