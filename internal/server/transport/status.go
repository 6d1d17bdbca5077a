package transport

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"html/template"
	"net/http"
	"strings"
)

// The status page's door: the same bearer token as /mcp, presented either
// as an Authorization header (scripts, the trace JSON) or, for a browser,
// as a session cookie the login form sets once the token is typed in.
//
// The cookie holds an HMAC of a fixed label keyed by the token, not the
// token itself: a leaked cookie opens the status page only, never /mcp, and
// changing [server].api_key invalidates every cookie. It is HttpOnly (no
// script reads it) and SameSite=Strict (no other site's page sends it), and
// the Host and Origin checks apply to every /status request as to /mcp.

const (
	// StatusPath is where the status page is mounted.
	StatusPath   = "/status/"
	loginPath    = "/status/login"
	logoutPath   = "/status/logout"
	statusCookie = "promptforge_status"
	// maxLoginBytes bounds a login form body.
	maxLoginBytes = 4 << 10
)

// sessionValue is the cookie value token opens the status page with.
func sessionValue(token []byte) string {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("promptforge status page session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// statusGuard lets a request through with the bearer header or the session
// cookie. Without either, a page request is sent to the login form and a
// JSON request (a path ending in .json) is refused with 401: neither
// carries any data.
func statusGuard(token []byte, next http.Handler) http.Handler {
	session := []byte(sessionValue(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if presents(r.Header.Get("Authorization"), token) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(statusCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), session) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".json") || r.Method != http.MethodGet {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized: present the server's bearer token, or log in at "+loginPath, http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, loginPath, http.StatusSeeOther)
	})
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PromptForge status: log in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px system-ui,sans-serif;max-width:28em;margin:4em auto;color:#222}
input{font:inherit;padding:.4em;width:100%;box-sizing:border-box;margin:.4em 0}
button{font:inherit;padding:.4em 1.2em}.err{color:#b00}</style></head>
<body><h1>PromptForge status</h1>
{{if .}}<p class="err" id="login-error">{{.}}</p>{{end}}
<form method="post" action="/status/login">
<label for="token">The server's bearer token ([server].api_key)</label>
<input id="token" name="token" type="password" autocomplete="current-password" autofocus required>
<button type="submit" id="login">Log in</button>
</form></body></html>
`))

// login serves the form (GET) and checks a submitted token (POST): the
// right one sets the session cookie and goes to the status page.
func login(token []byte) http.Handler {
	session := sessionValue(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			loginPage.Execute(w, "")
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "the login form could not be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !presents("Bearer "+r.PostForm.Get("token"), token) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			loginPage.Execute(w, "That is not the server's token: type the value of [server].api_key.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: statusCookie, Value: session, Path: "/status",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, StatusPath, http.StatusSeeOther)
	})
}

// logout clears the session cookie.
func logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: statusCookie, Value: "", Path: "/status", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, loginPath, http.StatusSeeOther)
}

// mountStatus routes the status page behind hostCheck and statusGuard; the
// login form is behind hostCheck only.
func mountStatus(mux *http.ServeMux, token []byte, hosts []authority, origins originPolicy, status http.Handler) {
	mux.Handle(loginPath, hostCheck(hosts, origins, login(token)))
	mux.Handle(logoutPath, hostCheck(hosts, origins, statusGuard(token, http.HandlerFunc(logout))))
	mux.Handle(StatusPath, hostCheck(hosts, origins, statusGuard(token, status)))
	mux.Handle("/status", http.RedirectHandler(StatusPath, http.StatusMovedPermanently))
}
