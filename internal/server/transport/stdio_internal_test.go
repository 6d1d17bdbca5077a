package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readAll returns the messages f passes on, each encoded as the SDK
// encodes it, one per line. They are encoded only once all are read, so a
// message that still pointed into the line buffer would show.
func readAll(t *testing.T, f *lineFilter) string {
	t.Helper()
	var msgs []jsonrpc.Message
	for {
		msg, err := f.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, msg)
	}
	var out strings.Builder
	for _, msg := range msgs {
		b, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.String()
}

func TestLineFilter(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	invalid := func(id, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"` + msg + `"}}` + "\n"
	}
	parseErr := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not one JSON value"}}` + "\n"
	noMethod := `the message has neither a \"method\" (a request) nor an \"id\" with a \"result\" or \"error\" (a response)`
	for _, tc := range []struct {
		name, in, want, replies string
	}{
		{"a normal line is delivered", ping + "\n", ping + "\n", ""},
		{"the last line needs no newline", ping, ping + "\n", ""},
		{"CRLF and a BOM are tolerated", "\xef\xbb\xbf" + ping + "\r\n", ping + "\n", ""},
		{"blank lines are skipped", "\n  \n" + ping + "\n", ping + "\n", ""},
		{"a response from the client is delivered", `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", ""},
		{"consecutive messages each keep their own bytes", `{"jsonrpc":"2.0","id":1,"method":"aaaa","params":{"x":"1111"}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"bbbb","params":{"y":"2222"}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"method":"aaaa","params":{"x":"1111"}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"bbbb","params":{"y":"2222"}}` + "\n", ""},
		{"a notification is delivered", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", ""},
		{"malformed JSON gets -32700", "{not json\n" + ping + "\n", ping + "\n", parseErr},
		{"two values on one line get -32700", ping + ping + "\n" + ping + "\n", ping + "\n", parseErr},
		{"a batch gets -32600", "[1,2]\n" + ping + "\n", ping + "\n", invalid("null", "a JSON-RPC batch (an array) is not accepted: send one message per line")},
		{"a string gets -32600", "\"hello\"\n" + ping + "\n", ping + "\n", invalid("null", "a JSON-RPC message must be a JSON object")},
		{"no jsonrpc member gets -32600 under its id", `{"id":1}` + "\n" + ping + "\n", ping + "\n", invalid("1", `\"jsonrpc\" must be \"2.0\"`)},
		{"a wrong version gets -32600 under its string id", `{"jsonrpc":"1.0","id":"a","method":"ping"}` + "\n", "", invalid(`"a"`, `\"jsonrpc\" must be \"2.0\"`)},
		{"a method that is not a string gets -32600", `{"jsonrpc":"2.0","id":3,"method":1}`, "", invalid("3", `\"method\" must be a string`)},
		{"neither request nor response gets -32600", `{"jsonrpc":"2.0","id":3}`, "", invalid("3", noMethod)},
		{"an id of another type gets -32600 with id null", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "", invalid("null", "id must be a string, an integer or null")},
		{"an over-cap line gets -32600 and the next arrives", `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 200) + "\"}\n" + ping + "\n", ping + "\n", invalid("null", "the message is longer than the 100-byte line limit")},
		{"EOF ends the stream", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replies strings.Builder
			f := newLineFilter(strings.NewReader(tc.in), 100, discard(), func(b []byte) { replies.Write(b) })
			if got := readAll(t, f); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if replies.String() != tc.replies {
				t.Fatalf("replied %q, want %q", replies.String(), tc.replies)
			}
		})
	}
}

// Ids the SDK would answer under another id (it converts a number through
// float64 to int64) are refused under the id as sent; exact integers and
// strings pass (issue #11 item 8).
func TestLineFilterIDs(t *testing.T) {
	for _, tc := range []struct {
		id   string
		pass bool
	}{
		{"1", true}, {"-7", true}, {"0", true}, {`"x"`, true}, {`"\u0041"`, true},
		{"9007199254740992", true}, {"1152921504606846976", true}, // 2^53, 2^60: exact in float64
		{"1.5", false}, {"1.0", false}, {"1e2", false},
		{"1180591620717411303424", false}, // 2^70
		{"9223372036854775807", false},    // 2^63-1: float64 rounds it to 2^63
		{"9007199254740993", false},       // 2^53+1: float64 rounds it to 2^53
	} {
		line := `{"jsonrpc":"2.0","id":` + tc.id + `,"method":"ping"}`
		var replies strings.Builder
		f := newLineFilter(strings.NewReader(line), 100, discard(), func(b []byte) { replies.Write(b) })
		got := readAll(t, f)
		if tc.pass {
			var passed struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(got), &passed) != nil || !sameID(passed.ID, json.RawMessage(tc.id)) || replies.Len() != 0 {
				t.Errorf("id %s: passed %q, replied %q; want it passed", tc.id, got, replies.String())
			}
			continue
		}
		var reply struct {
			ID    json.RawMessage `json:"id"`
			Error struct{ Code int }
		}
		if got != "" || json.Unmarshal([]byte(replies.String()), &reply) != nil || string(reply.ID) != tc.id || reply.Error.Code != -32600 {
			t.Errorf("id %s: passed %q, replied %q; want -32600 under the id as sent", tc.id, got, replies.String())
		}
	}
}

// An over-cap line is skipped without being buffered: the line buffer
// never grows past the cap plus one read chunk.
func TestLineFilterMemoryIsBounded(t *testing.T) {
	const capBytes = 64 << 10
	huge := strings.Repeat("x", 10<<20)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	f := newLineFilter(strings.NewReader(huge+"\n"+ping+"\n"), capBytes, discard(), func([]byte) {})
	var got []jsonrpc.Message
	for {
		msg, err := f.next()
		if c := cap(f.line); c > capBytes+readChunk+readChunk {
			t.Fatalf("the line buffer grew to %d bytes", c)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg)
	}
	if len(got) != 1 || got[0].(*jsonrpc.Request).Method != "ping" {
		t.Fatalf("got %v", got)
	}
}

// The stdio connection gives the errors the SDK would send with code 0
// (a call cancelled before its handler ran is answered with the bare
// "context canceled", below every middleware) a valid code, as the HTTP
// writer does; a coded error keeps its code.
func TestStdioRepliesHaveValidCodes(t *testing.T) {
	id, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want int64
	}{
		{context.Canceled, CodeRequestCancelled},
		{errors.New(`duplicate "initialize" received`), jsonrpc.CodeInvalidRequest},
		{errors.New("something broke"), jsonrpc.CodeInternalError},
		{&jsonrpc.Error{Code: 0, Message: "uncoded"}, jsonrpc.CodeInternalError},
		{fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "x"}), jsonrpc.CodeMethodNotFound},
	} {
		var out strings.Builder
		c := &stdioConn{calls: newReplyTracker(), out: &out}
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Error: tc.err}); err != nil {
			t.Fatal(err)
		}
		var reply struct {
			ID    int64 `json:"id"`
			Error struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(out.String()), &reply); err != nil {
			t.Fatalf("%v: reply %q: %v", tc.err, out.String(), err)
		}
		if reply.ID != 7 || reply.Error.Code != tc.want || reply.Error.Message != tc.err.Error() {
			t.Errorf("%v: reply %s, want code %d under id 7 with the message kept", tc.err, out.String(), tc.want)
		}
	}
}
