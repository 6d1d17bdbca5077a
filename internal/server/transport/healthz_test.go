package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// /healthz reports the shared run store when there is one: 200 and "ok"
// while it answers, 503 and "unreachable" (never the store's error text,
// which may name its host) when it does not; without one, the plain answer.
func TestHealthzReportsTheRunStore(t *testing.T) {
	down := errors.New("dial tcp db.internal:5432: connection refused")
	for _, tt := range []struct {
		name  string
		check func(context.Context) error
		code  int
		body  string
	}{
		{"memory", nil, 200, `{"status":"serving"}`},
		{"store up", func(context.Context) error { return nil }, 200, `{"status":"serving","store":"ok"}`},
		{"store down", func(context.Context) error { return down }, 503, `{"status":"degraded","store":"unreachable"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := HTTPHandler(Backend{Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}, Health: tt.check})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			res, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.code || string(b) != tt.body {
				t.Fatalf("/healthz = %d %s; want %d %s", res.StatusCode, b, tt.code, tt.body)
			}
		})
	}
}
