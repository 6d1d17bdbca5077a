package transport

import (
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLineFilter(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a normal line is delivered", ping + "\n", ping + "\n"},
		{"the last line needs no newline", ping, ping + "\n"},
		{"CRLF and a BOM are tolerated", "\xef\xbb\xbf" + ping + "\r\n", ping + "\n"},
		{"blank lines are skipped", "\n  \n" + ping + "\n", ping + "\n"},
		{"malformed JSON is dropped", "{not json\n" + ping + "\n", ping + "\n"},
		{"JSON that is not JSON-RPC is dropped", "[1,2]\n\"hello\"\n{\"id\":1}\n" + ping + "\n", ping + "\n"},
		{"two values on one line are dropped", ping + ping + "\n" + ping + "\n", ping + "\n"},
		{"an over-cap line is dropped and the next arrives", `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 200) + "\"}\n" + ping + "\n", ping + "\n"},
		{"EOF ends the stream", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLineFilter(strings.NewReader(tc.in), 100, discard())
			if got := readAll(t, f); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// An over-cap line is skipped without being buffered: the line buffer
// never grows past the cap plus one read chunk.
func TestLineFilterMemoryIsBounded(t *testing.T) {
	const capBytes = 64 << 10
	huge := strings.Repeat("x", 10<<20)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	f := newLineFilter(strings.NewReader(huge+"\n"+ping+"\n"), capBytes, discard())
	buf := make([]byte, 4096)
	var out strings.Builder
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if c := cap(f.line); c > capBytes+readChunk+readChunk {
			t.Fatalf("the line buffer grew to %d bytes", c)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != ping+"\n" {
		t.Fatalf("got %q", out.String())
	}
}
