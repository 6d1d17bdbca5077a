package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// Every kind of redirect a gateway may send is followed, or not, as
// http.Client follows it, whether the client's transport is the
// gateway's (which reads the first reply itself and hands a redirect to
// http.Client) or net/http's: what each hop saw, the error, the reply.
func TestRedirectKindsAsNetHTTP(t *testing.T) {
	type hop struct{ method, path, auth, body, cookie string }
	cases := []struct {
		name string
		// reply answers the n-th request (from 0) to the first server.
		reply func(n int, w http.ResponseWriter, r *http.Request, other string)
		hc    func(*http.Client)
	}{
		{"301", func(n int, w http.ResponseWriter, r *http.Request, _ string) { redirectOnce(n, w, r, "/v2/chat", 301) }, nil},
		{"303", func(n int, w http.ResponseWriter, r *http.Request, _ string) { redirectOnce(n, w, r, "/v2/chat", 303) }, nil},
		{"308", func(n int, w http.ResponseWriter, r *http.Request, _ string) { redirectOnce(n, w, r, "/v2/chat", 308) }, nil},
		{"relative", func(n int, w http.ResponseWriter, r *http.Request, _ string) { redirectOnce(n, w, r, "../v2/x", 307) }, nil},
		{"other host", func(n int, w http.ResponseWriter, r *http.Request, other string) {
			redirectOnce(n, w, r, other+"/v1/chat/completions", 308)
		}, nil},
		{"loop", func(_ int, w http.ResponseWriter, r *http.Request, _ string) { http.Redirect(w, r, r.URL.Path, 307) }, nil},
		{"no location", func(_ int, w http.ResponseWriter, _ *http.Request, _ string) { w.WriteHeader(302) }, nil},
		{"big body", func(n int, w http.ResponseWriter, r *http.Request, _ string) {
			if n == 0 {
				w.Header().Set("Location", "/v2/chat")
				w.WriteHeader(307)
				_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
				return
			}
			_, _ = io.WriteString(w, chatOK)
		}, nil},
		{"CheckRedirect", func(n int, w http.ResponseWriter, r *http.Request, _ string) { redirectOnce(n, w, r, "/v2/chat", 307) },
			func(hc *http.Client) {
				hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			}},
		{"Jar", func(n int, w http.ResponseWriter, r *http.Request, _ string) {
			if n == 0 {
				http.SetCookie(w, &http.Cookie{Name: "c", Value: "v", Path: "/"})
			}
			redirectOnce(n, w, r, "/v2/chat", 307)
		}, func(hc *http.Client) { hc.Jar, _ = cookiejar.New(nil) }},
	}
	for _, tc := range cases {
		run := func(tr http.RoundTripper) string {
			var mu sync.Mutex
			var hops []hop
			record := func(r *http.Request) int {
				body, _ := io.ReadAll(r.Body)
				cookie := ""
				if c, err := r.Cookie("c"); err == nil {
					cookie = c.Value
				}
				mu.Lock()
				defer mu.Unlock()
				hops = append(hops, hop{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(body), cookie})
				return len(hops) - 1
			}
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				record(r)
				_, _ = io.WriteString(w, chatOK)
			}))
			defer other.Close()
			n := 0
			first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				record(r)
				mu.Lock()
				i := n
				n++
				mu.Unlock()
				tc.reply(i, w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
			}))
			defer first.Close()
			hc := &http.Client{Transport: tr}
			if tc.hc != nil {
				tc.hc(hc)
			}
			c, err := gateway.New(gateway.Options{BaseURL: first.URL + "/v1", APIKey: secret.MustNew("k"), HTTPClient: hc})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(t.Context(), userTurn("hi"))
			msg := ""
			if err != nil {
				msg = strings.ReplaceAll(strings.ReplaceAll(err.Error(), first.URL, "FIRST"), other.URL, "OTHER")
			}
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprintf("%+v\nerror: %s", hops, msg)
		}
		ours := run(gateway.NewTransport())
		theirs := run(http.DefaultTransport.(*http.Transport).Clone())
		if ours != theirs {
			t.Errorf("%s: through the gateway's transport\n%s\nthrough net/http's\n%s", tc.name, ours, theirs)
		}
	}
}

// redirectOnce redirects the first request to to with code, and answers
// a chat reply after.
func redirectOnce(n int, w http.ResponseWriter, r *http.Request, to string, code int) {
	if n == 0 {
		http.Redirect(w, r, to, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, chatOK)
}
