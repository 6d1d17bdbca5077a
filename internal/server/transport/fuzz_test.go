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

// FuzzStdioFraming feeds arbitrary input to the stdio line filter. It must
// never fail other than at the end of input (an error would end the
// session), every call it passes must come back under the same tracker
// key, every refusal must be one JSON-RPC error on one line, and the line
// buffer stays bounded.
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
		for {
			msg, err := flt.next()
			if cap(flt.line) > 2*(limit+readChunk) {
				t.Fatalf("the line buffer grew to %d bytes", cap(flt.line))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			// The message must be the one the SDK's decoder makes of its
			// line (envelopeRequest is a shortcut, not a second opinion).
			enc, err := jsonrpc.EncodeMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			line := bytes.TrimSpace(bytes.TrimPrefix(flt.line, utf8BOM)) // still the message's line
			if want, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Fatalf("passed a line the SDK cannot decode (%v): %q", err, line)
			} else if wenc, _ := jsonrpc.EncodeMessage(want); !bytes.Equal(enc, wenc) {
				t.Fatalf("line %q: passed %s, the SDK decodes %s", line, enc, wenc)
			}
			// What the SDK gets must survive its own encoding: the
			// reply to a call goes out under an id the tracker matches.
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.IsCall() {
				continue
			}
			answer, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			back, err := jsonrpc.DecodeMessage(answer)
			if err != nil {
				t.Fatal(err)
			}
			if idKey(back.(*jsonrpc.Response).ID) != idKey(req.ID) || idKey(req.ID) == "" {
				t.Fatalf("id %v comes back as %v", req.ID.Raw(), back.(*jsonrpc.Response).ID.Raw())
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
		const max = 4096
		if len(line) > max {
			// Over the line bound: refused before its id is read, so under
			// id null (lineFilter.line1), which TestStdioSurvivesAHostilePeer
			// and TestLineFilterMemoryIsBounded cover: not this target's
			// concern.
			return
		}
		var replies bytes.Buffer
		flt := newLineFilter(strings.NewReader(line), max, discard(), func(b []byte) { replies.Write(b) })
		msg, err := flt.next()
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if msg == nil {
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
