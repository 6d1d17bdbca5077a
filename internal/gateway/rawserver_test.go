package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// newRawServer is for the few wire edge cases gatewaytest deliberately
// cannot produce (chunked oversize bodies).
func newRawServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
