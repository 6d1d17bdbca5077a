package config

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"
)

func TestErrorRendering(t *testing.T) {
	cases := []struct {
		name string
		err  *Error
		want string
	}{
		{"read with its OS cause", &Error{Kind: KindRead, Path: "/etc/pf/prompts.toml", Err: syscall.ENOENT},
			"read config /etc/pf/prompts.toml: no such file or directory"},
		{"read without a cause", &Error{Kind: KindRead, Path: "p.toml"}, "read config p.toml"},
		{"parse with file and line", &Error{Kind: KindParse, Path: "p.toml", Line: 3, Detail: "bad"}, "parse config: p.toml:3: bad"},
		{"parse with file only", &Error{Kind: KindParse, Path: "p.toml", Detail: "bad"}, "parse config: p.toml: bad"},
		{"parse with line only", &Error{Kind: KindParse, Line: 3, Detail: "bad"}, "parse config: line 3: bad"},
		{"parse without a location", &Error{Kind: KindParse, Detail: "bad"}, "parse config: bad"},
		{"empty token", &Error{Kind: KindEmptyToken, Line: 2, Key: "[server].api_key", Detail: "[server].api_key must not be empty"},
			"[server].api_key must not be empty"},
		{"unresolved", &Error{Kind: KindUnresolvedVar, Var: "NOPE", Key: "[gateway].api_key", Line: 7, Detail: "set it"},
			"unresolved environment variable NOPE (in [gateway].api_key on line 7): set it"},
		{"interpolation", &Error{Kind: KindInterpolation, Key: "[paths].prompts", Detail: "unclosed ${...} interpolation"},
			"interpolation: unclosed ${...} interpolation (in [paths].prompts)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorKindsFromLoads(t *testing.T) {
	read := &Error{Kind: KindRead, Path: "x", Err: syscall.ENOENT}
	if !errors.Is(read, fs.ErrNotExist) || errors.Unwrap(read) != syscall.ENOENT {
		t.Error("a read error must expose its OS cause")
	}
	e := parseErr(t, minimal+"[paths]\nprompts = \"${NOPE}\"\n", nil)
	if e.Kind != KindUnresolvedVar || e.Var != "NOPE" || e.Path != "" {
		t.Errorf("unresolved: kind %v var %q path %q", e.Kind, e.Var, e.Path)
	}
	e = parseErr(t, minimal+"[paths]\nprompts = \"${OPEN\"\n", nil)
	if e.Kind != KindInterpolation || !errors.Is(e, errUnclosed) {
		t.Errorf("interpolation: kind %v cause %v", e.Kind, e.Err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindRead: "read", KindParse: "parse", KindEmptyToken: "empty token",
		KindUnresolvedVar: "unresolved variable", KindInterpolation: "interpolation", Kind(0): "Kind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}
