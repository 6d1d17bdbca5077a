package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The smallest sizes [limits] accepts: below them a run, a request or the
// process could not do its ordinary work, so a smaller value is a typo.
const (
	minRunMemory   = 1 << 20
	minRequestSize = 64 << 10
	minProcessMem  = 64 << 20
)

// buildLimits reads [limits] (issue #11: no prompt may exhaust the
// process).
func (p *parser) buildLimits(r *rawLimits, l *Limits) error {
	for _, s := range []struct {
		key, what string
		min       int64
		raw       *string
		dst       *int64
	}{
		{"max_run_memory", "what one run's Lua values and store may hold", minRunMemory, r.MaxRunMemory, &l.MaxRunMemory},
		{"max_request_size", "one chat request to the model server", minRequestSize, r.MaxRequestSize, &l.MaxRequestSize},
		{"process_memory", "the process's memory, for the Go runtime's collector", minProcessMem, r.ProcessMemory, &l.ProcessMemory},
	} {
		if s.raw == nil {
			continue
		}
		at := tomlPath{"limits", s.key}
		if s.key == "process_memory" && strings.TrimSpace(*s.raw) == "0" {
			*s.dst = NoProcessMemoryLimit
			continue
		}
		n, err := ParseSize(*s.raw)
		if err != nil {
			return p.fail(at, "[limits]."+s.key+" is not a size: "+err.Error())
		}
		if n < s.min {
			hint := ""
			if s.key == "process_memory" {
				hint = `, or "0" for no limit`
			}
			return p.fail(at, fmt.Sprintf("[limits].%s = %q is too small: it bounds %s; use at least %q%s",
				s.key, *s.raw, s.what, FormatSize(s.min), hint))
		}
		*s.dst = n
	}
	return nil
}

var sizeUnits = []struct {
	name  string
	bytes int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseSize reads a size as prompts.toml spells it: a whole number and a
// binary unit, B, KiB, MiB or GiB ("64MiB", "512 KiB"). Decimal units (MB)
// are refused rather than guessed at.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	cut := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+' })
	if cut < 0 {
		cut = len(t)
	}
	num, unit := t[:cut], strings.TrimSpace(t[cut:])
	for _, u := range sizeUnits {
		if unit != u.name {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 || num == "" || num[0] == '+' {
			if errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("%q is too large", s)
			}
			return 0, fmt.Errorf("%q: write a whole number of bytes before the unit, such as \"64MiB\"", s)
		}
		if n > (1<<62)/u.bytes {
			return 0, fmt.Errorf("%q is too large", s)
		}
		return n * u.bytes, nil
	}
	return 0, errors.New(strconv.Quote(s) + `: write a number and a unit, such as "64MiB" (units: B, KiB, MiB, GiB)`)
}

// FormatSize writes n in the largest unit that divides it.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.bytes && n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
