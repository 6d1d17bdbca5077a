package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStdioFraming feeds arbitrary input to the stdio line filter. Every
// line it hands the SDK must be one the SDK decodes (a line it cannot
// decode would end the session), carry an id the SDK answers under
// exactly (the same tracker key both ways); every refusal must be one
// JSON-RPC error on one line; and the line buffer stays bounded.
func FuzzStdioFraming(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":null}]}}}` + "\r\n",
		"\xef\xbb\xbf" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0069d":2.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}` + "\n" + `{"jsonrpc":"2.0","id":7,"error":5}`,
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n{not json\n\n  \n",
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}",
		`{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 300) + "\"}\n",
	} {
		f.Add([]byte(seed))
	}
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		var replies bytes.Buffer
		flt := newLineFilter(bytes.NewReader(data), limit, discard(), func(b []byte) { replies.Write(b) })
		var out bytes.Buffer
		buf := make([]byte, 512)
		for {
			n, err := flt.Read(buf)
			out.Write(buf[:n])
			if cap(flt.line) > 2*(limit+readChunk) {
				t.Fatalf("the line buffer grew to %d bytes", cap(flt.line))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for line := range strings.Lines(out.String()) {
			if !strings.HasSuffix(line, "\n") {
				t.Fatalf("a passed line lacks its newline: %q", line)
			}
			msg, err := jsonrpc.DecodeMessage([]byte(line[:len(line)-1]))
			if err != nil {
				t.Fatalf("passed a line the SDK cannot decode (%v): %q", err, line)
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.IsCall() {
				continue
			}
			e, _ := scanEnvelope([]byte(line))
			in, ok := idKey(e.id)
			if !ok {
				t.Fatalf("a call with no tracker key: %q", line)
			}
			answer, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ae, _ := scanEnvelope(answer)
			if back, _ := idKey(ae.id); back != in {
				t.Fatalf("id %s comes back as %s", e.id, ae.id)
			}
		}
		for line := range strings.Lines(replies.String()) {
			var r struct {
				JSONRPC string
				ID      json.RawMessage
				Error   struct {
					Code    int
					Message string
				}
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" || (r.Error.Code != -32700 && r.Error.Code != -32600) || r.Error.Message == "" {
				t.Fatalf("a refusal that is not one JSON-RPC error (%v): %q", err, line)
			}
		}
	})
}

// FuzzJSONRPCID checks every id spelling against the SDK's own decoding:
// an id the transport passes is answered under the same value, and one it
// refuses gets -32600 under the id as sent.
func FuzzJSONRPCID(f *testing.F) {
	for _, seed := range []string{"1", "-1", "0", "-0", "1.5", "1e2", "1E+2", "2.0", "9007199254740992", "9007199254740993",
		"9223372036854775807", "-9223372036854775808", "1180591620717411303424", `"x"`, `"\u00e9"`, "null", "true", "{}", "[1]"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		if !json.Valid([]byte(line)) {
			return
		}
		var replies bytes.Buffer
		flt := newLineFilter(strings.NewReader(line), 4096, discard(), func(b []byte) { replies.Write(b) })
		passed, err := io.ReadAll(flt)
		if err != nil {
			t.Fatal(err)
		}
		if len(passed) == 0 {
			if strings.ContainsAny(id, "\n\r") { // the line was split: not this target's concern
				return
			}
			var r struct {
				ID    json.RawMessage
				Error struct{ Code int }
			}
			if json.Unmarshal(replies.Bytes(), &r) != nil || r.Error.Code != codeInvalidRequest {
				t.Fatalf("id %s: refused with %q", id, replies.String())
			}
			if want := strings.TrimSpace(id); (want[0] == '"' || want[0] == '-' || (want[0] >= '0' && want[0] <= '9')) && string(r.ID) != want {
				t.Fatalf("id %s: refused under id %s", id, r.ID)
			}
			return
		}
		msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(passed))
		if err != nil {
			t.Fatalf("id %s: passed a line the SDK cannot decode: %v", id, err)
		}
		req := msg.(*jsonrpc.Request)
		answer, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		var got, sent struct{ ID json.RawMessage }
		json.Unmarshal(answer, &got)
		json.Unmarshal([]byte(line), &sent)
		if !sameID(sent.ID, got.ID) {
			t.Fatalf("id %s is answered as %s", sent.ID, got.ID)
		}
	})
}

// sameID compares two id spellings by value: numbers exactly, strings
// unescaped, null as null (absent in a response).
func sameID(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || string(a) == "null" {
		return len(b) == 0 || string(b) == "null"
	}
	if a[0] == '"' {
		var x, y string
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x == y
	}
	x, okx := new(big.Float).SetPrec(256).SetString(string(a))
	y, oky := new(big.Float).SetPrec(256).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}
