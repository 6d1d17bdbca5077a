package gateway_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
)

// Many turns over a small pool, some reading part of a reply and closing
// it (twice), some cancelled at a random moment: every reply read whole is
// the one its request asked for (no connection went back to the pool with
// bytes of another reply), and a closed body reads nothing.
func TestDirectReuseUnderCancellationAndEarlyClose(t *testing.T) {
	skipWithoutDirect(t)
	g := newRawGateway(t, func(_ int64, req *http.Request) (string, bool) {
		body := strings.Repeat(req.URL.Path, 200)
		return withLength("HTTP/1.1 200 OK\r\n", body), false
	})
	tr := gateway.NewTransport()
	tr.MaxIdleConnsPerHost = 4
	t.Cleanup(tr.CloseIdleConnections)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 100 {
				path := "/" + strconv.Itoa(w) + "-" + strconv.Itoa(i) + "/"
				ctx, cancel := context.WithCancel(t.Context())
				mode := rand.IntN(4)
				if mode == 3 {
					time.AfterFunc(time.Duration(rand.IntN(200))*time.Microsecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL()+path, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					if mode != 3 {
						t.Errorf("%s: %v", path, err)
					}
					cancel()
					continue
				}
				switch mode {
				case 1:
					b := make([]byte, rand.IntN(50))
					_, _ = io.ReadFull(resp.Body, b)
					resp.Body.Close()
					resp.Body.Close()
				default:
					b, err := io.ReadAll(resp.Body)
					if err == nil && string(b) != strings.Repeat(path, 200) {
						t.Errorf("%s: got %q...", path, b[:min(40, len(b))])
					}
					if err != nil && mode != 3 {
						t.Errorf("%s: %v", path, err)
					}
					resp.Body.Close()
					if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
						t.Error("read after close")
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
}
