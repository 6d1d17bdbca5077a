package store

import (
	"strings"
)

// MaxPathLen bounds both paths and glob patterns, in bytes.
const MaxPathLen = 1024

// ValidatePath reports why p is not a legal store path, or nil.
//
// The rules keep every store path usable as a relative path on any host
// filesystem, so a store can later be written to disk (or backed by one)
// without a path escaping its root or naming a device.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errInvalidPath(p, "the path is empty")
	case len(p) > MaxPathLen:
		return errInvalidPath(p, "the path is longer than 1024 bytes")
	case p[0] == '/':
		return errInvalidPath(p, "the path must be relative, not start with /")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isControl(c) {
			return errInvalidPath(p, "the path contains a control character")
		}
		if c == '\\' {
			return errInvalidPath(p, "the path contains a backslash; separate segments with /")
		}
	}
	rest := p
	for {
		seg, tail, more := strings.Cut(rest, "/")
		if reason := segmentProblem(seg); reason != "" {
			return errInvalidPath(p, reason)
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

func isControl(c byte) bool { return c < 0x20 || c == 0x7f }

func segmentProblem(seg string) string {
	switch {
	case seg == "":
		return "the path has an empty segment (a doubled or trailing /)"
	case seg == "." || seg == "..":
		return "the path has a . or .. segment"
	}
	switch seg[len(seg)-1] {
	case '.':
		return "segment \"" + seg + "\" ends in a dot"
	case ' ':
		return "segment \"" + seg + "\" ends in a space"
	}
	if isDeviceName(seg) {
		return "segment \"" + seg + "\" is a reserved Windows device name"
	}
	return ""
}

// isDeviceName reports whether seg is a Windows device name. Windows
// ignores the extension (NUL.txt is still the null device), so only the
// part before the first dot is compared.
func isDeviceName(seg string) bool {
	base, _, _ := strings.Cut(seg, ".")
	switch len(base) {
	case 3:
		for _, name := range [...]string{"con", "prn", "aux", "nul"} {
			if strings.EqualFold(base, name) {
				return true
			}
		}
	case 4:
		if base[3] < '1' || base[3] > '9' {
			return false
		}
		return strings.EqualFold(base[:3], "com") || strings.EqualFold(base[:3], "lpt")
	}
	return false
}
