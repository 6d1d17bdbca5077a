package transport

import (
	"context"
	"io"
	"net/http"
	"time"
)

// healthTimeout bounds /healthz's store check: a load balancer's probe
// must get an answer well inside its own timeout.
const healthTimeout = 2 * time.Second

// healthz answers /healthz (open, no token). Without a shared run store it
// says the server is serving. With one it also reports the store: "ok", or
// 503 with "unreachable" when the store does not answer, since this
// replica can then neither start runs nor read other replicas' records; a
// load balancer takes it out until the store is back. The error itself is
// logged by the store's users, not published here.
func healthz(check func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if check == nil {
			io.WriteString(w, `{"status":"serving"}`)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		if err := check(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"degraded","store":"unreachable"}`)
			return
		}
		io.WriteString(w, `{"status":"serving","store":"ok"}`)
	})
}
