package apiurl

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Problem is what is wrong with a URL.
type Problem uint8

const (
	// Empty: the URL is blank.
	Empty Problem = iota + 1
	// Unparseable: url.Parse refused it; Error.Err holds its reason.
	Unparseable
	// NoScheme: the URL has no scheme, so it is not absolute.
	NoScheme
	// BadScheme: the scheme is not http or https; Error.Scheme holds it.
	BadScheme
	// NoHost: the URL names no host.
	NoHost
	// Userinfo: the URL carries user:password@, which belongs in the key
	// setting.
	Userinfo
	// Query: the URL has a query (even an empty "?").
	Query
	// Fragment: the URL has a fragment (even an empty "#").
	Fragment
)

var problemNames = [...]string{
	Empty: "empty", Unparseable: "unparseable", NoScheme: "no scheme", BadScheme: "unsupported scheme",
	NoHost: "no host", Userinfo: "userinfo", Query: "query", Fragment: "fragment",
}

func (p Problem) String() string {
	if int(p) < len(problemNames) && problemNames[p] != "" {
		return problemNames[p]
	}
	return "Problem(" + strconv.Itoa(int(p)) + ")"
}

// Error reports the first Problem found. Its message never repeats the
// URL, which may hold credentials; callers word their own messages from
// Problem.
type Error struct {
	Problem Problem
	// Scheme is the refused scheme, for BadScheme.
	Scheme string
	// Err is url.Parse's reason, for Unparseable.
	Err error
}

func (e *Error) Error() string {
	switch e.Problem {
	case Unparseable:
		return "the URL cannot be parsed: " + e.Err.Error()
	case BadScheme:
		return "the URL scheme " + strconv.Quote(e.Scheme) + " is not http or https"
	}
	return "the URL has a problem: " + e.Problem.String()
}

// Unwrap returns url.Parse's reason for Unparseable.
func (e *Error) Unwrap() error { return e.Err }

// CheckShape checks what every gateway URL must be: non-blank, parseable,
// http or https, with a host. Problems are reported in that order.
func CheckShape(raw string) (*url.URL, *Error) {
	u, err := parse(raw)
	if err != nil {
		return nil, err
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	if err := checkHost(u); err != nil {
		return nil, err
	}
	return u, nil
}

// Check is the whole API-root rule: the shape, and no userinfo, query or
// fragment. Problems are reported in the order Empty, Unparseable,
// Userinfo, NoScheme or BadScheme, NoHost, Query, Fragment (credentials
// first: they are the most urgent thing to tell an operator).
func Check(raw string) (*url.URL, *Error) {
	u, err := parse(raw)
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		return nil, &Error{Problem: Userinfo}
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	if err := checkHost(u); err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, &Error{Problem: Query}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, &Error{Problem: Fragment}
	}
	return u, nil
}

func parse(raw string) (*url.URL, *Error) {
	if strings.TrimSpace(raw) == "" {
		return nil, &Error{Problem: Empty}
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &Error{Problem: Unparseable, Err: err}
	}
	return u, nil
}

func checkScheme(u *url.URL) *Error {
	switch u.Scheme {
	case "http", "https":
		return nil
	case "":
		return &Error{Problem: NoScheme}
	}
	return &Error{Problem: BadScheme, Scheme: u.Scheme}
}

// checkHost: an opaque URL ("http:gw") or an empty host name
// ("http:///v1", "http://:8081/v1") names no host.
func checkHost(u *url.URL) *Error {
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return &Error{Problem: NoHost}
	}
	return nil
}
