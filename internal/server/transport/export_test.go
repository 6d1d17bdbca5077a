package transport

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxBodyBytes is the /mcp body cap, for the tests that send one byte more.
const MaxBodyBytes = maxBodyBytes

// ServeStdioLane is ServeStdio with the tools/call fast lane on or off,
// counting in taken (when not nil) the calls the lane answered itself.
func ServeStdioLane(ctx context.Context, in io.Reader, out io.Writer, b Backend, drain time.Duration, on bool, taken *atomic.Int64) error {
	return serveStdio(ctx, in, out, b, drain, laneOptions{off: !on, taken: taken})
}

// ServeStdioCounting is ServeStdio with the fast lane on, counting in
// taken the calls it answered and in workers the workers it started
// (either nil: not counted).
func ServeStdioCounting(ctx context.Context, in io.Reader, out io.Writer, b Backend, drain time.Duration, taken, workers *atomic.Int64) error {
	return serveStdio(ctx, in, out, b, drain, laneOptions{taken: taken, workers: workers})
}

// HTTPHandlerSDKOnly is HTTPHandler with the calls of established
// stateful sessions left to the SDK's handler (statefulCalls off).
func HTTPHandlerSDKOnly(b Backend, opts HTTPOptions) (http.Handler, error) {
	return httpHandler(b, opts, pathKnobs{sdkOnly: true})
}

// HTTPHandlerCounting is HTTPHandler counting in taken the calls
// statefulCalls answered.
func HTTPHandlerCounting(b Backend, opts HTTPOptions, taken *atomic.Int64) (http.Handler, error) {
	return httpHandler(b, opts, pathKnobs{taken: taken})
}

// scanBody makes body's view, as readBack.view makes it.
func scanBody(body []byte) *bodyView {
	v := &bodyView{}
	v.scan(body)
	return v
}

// messages is body's messages (bodyView.messages).
func messages(body []byte) []message {
	return scanBody(body).messages()
}

// requestProblem is envelopeProblem for a message not yet scanned.
func requestProblem(msg []byte) (code int, problem string, replyID []byte) {
	e, ok := scanEnvelope(msg)
	return envelopeProblem(msg, e, ok)
}

// decodeRequest is envelopeRequest for a message not yet scanned.
func decodeRequest(msg []byte) (req *jsonrpc.Request, ok bool) {
	e, _ := scanEnvelope(msg)
	return envelopeRequest(e)
}
