package transport

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reusingPeer is the stdio peer of TestStdioIDReusedOnceItsReplyIsRead:
// it reads every line the server writes, and on reading the reply to its
// initialize (id 1) sends next at once, under the same id, and lets the
// server read it before that reply's write returns: as a peer on the
// other end of a pipe may, since it has the reply as soon as it is in the
// pipe. It runs inside a synctest bubble.
type reusingPeer struct {
	in   io.Writer
	next string
	sent chan struct{} // closed once next has been read by the server

	mu   sync.Mutex
	out  bytes.Buffer
	once sync.Once
}

func (p *reusingPeer) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.out.Write(b)
	p.mu.Unlock()
	if bytes.Contains(b, []byte(`"id":1,"result":{"capabilities"`)) {
		p.once.Do(func() {
			go io.WriteString(p.in, p.next+"\n")
			// Every other goroutine blocked: the server has read next
			// and handed it on.
			synctest.Wait()
			close(p.sent)
		})
	}
	return len(b), nil
}

func (p *reusingPeer) lines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// A peer may reuse a request's id as soon as it has read the reply: an id
// need only be unique among the requests in flight (JSON-RPC 2.0 §4), and
// jsonrpc2's processResult forgets an id before it writes its reply for
// that reason. A request read under such an id while the reply is on its
// way must still count as unanswered, or the end of input does not wait
// for its reply (replyTracker; go-sdk#1061) and the SDK, its read loop
// ended, drops it.
func TestStdioIDReusedOnceItsReplyIsRead(t *testing.T) {
	for _, lane := range []bool{true, false} {
		t.Run(map[bool]string{true: "lane", false: "sdk"}[lane], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mcp.NewServer(&mcp.Implementation{Name: "reuse", Version: "1"}, nil)
				calls := &Calls{}
				srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}}, calls.Track(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					// A call that takes a second and answers: the
					// drain must wait for it.
					time.Sleep(time.Second)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
				}))
				inR, inW := io.Pipe()
				peer := &reusingPeer{in: inW, sent: make(chan struct{}),
					next: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`}
				served := make(chan error, 1)
				go func() {
					served <- serveStdio(context.Background(), inR, peer, Backend{MCP: srv, Calls: calls}, 10*time.Second, laneOptions{off: !lane})
				}()
				if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
					t.Fatal(err)
				}
				<-peer.sent
				inW.Close() // the end of input, with the call in flight
				if err := <-served; err != nil {
					t.Fatal(err)
				}
				if out := peer.lines(); !strings.Contains(out, `"text":"done"`) {
					t.Errorf("the call under the reused id 1 got no reply before the session ended; the server wrote:\n%s", out)
				}
			})
		})
	}
}
