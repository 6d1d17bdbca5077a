package config

import (
	"strings"
	"testing"
)

func TestLimitsAreRead(t *testing.T) {
	cfg := mustParse(t, minimal+"[limits]\nmax_run_memory = \"8MiB\"\nmax_request_size = \"512 KiB\"\nprocess_memory = \"2GiB\"\n", nil)
	if got := cfg.Limits; got != (Limits{MaxRunMemory: 8 << 20, MaxRequestSize: 512 << 10, ProcessMemory: 2 << 30}) {
		t.Fatalf("limits = %+v", got)
	}
	if cfg := mustParse(t, minimal+"[limits]\nprocess_memory = \"0\"\n", nil); cfg.Limits.ProcessMemory != NoProcessMemoryLimit {
		t.Fatalf(`process_memory = "0" gave %d`, cfg.Limits.ProcessMemory)
	}
}

func TestLimitsRefuseBadSizes(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`max_run_memory = "64MB"`, `[limits].max_run_memory is not a size: "64MB": write a number and a unit, such as "64MiB" (units: B, KiB, MiB, GiB)`},
		{`max_run_memory = "lots"`, `write a number and a unit`},
		{`max_run_memory = "1.5GiB"`, `write a whole number of bytes before the unit`},
		{`max_run_memory = "-1MiB"`, `write a whole number of bytes before the unit`},
		{`max_run_memory = "MiB"`, `write a whole number of bytes before the unit`},
		{`max_run_memory = "99999999999GiB"`, `is too large`},
		{`max_run_memory = "512KiB"`, `[limits].max_run_memory = "512KiB" is too small: it bounds what one run's Lua values and store may hold; use at least "1MiB"`},
		{`max_request_size = "1KiB"`, `use at least "64KiB"`},
		{`process_memory = "1MiB"`, `use at least "64MiB", or "0" for no limit`},
		{`max_run_memory = 67108864`, `a size string such as "64MiB"`},
		{`max_memory = "1GiB"`, `max_memory`},
	} {
		e := parseErr(t, minimal+"[limits]\n"+tc.line+"\n", nil)
		if !strings.Contains(e.Error(), tc.want) || e.Line != 8 {
			t.Errorf("%s: error %q (line %d), want it to contain %q on line 8", tc.line, e.Error(), e.Line, tc.want)
		}
	}
}

func TestSizesRoundTrip(t *testing.T) {
	for s, n := range map[string]int64{"64MiB": 64 << 20, "1GiB": 1 << 30, "3KiB": 3 << 10, "100B": 100, "1025KiB": 1025 << 10} {
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, n)
		}
		if f := FormatSize(n); f != s {
			t.Errorf("FormatSize(%d) = %q, want %q", n, f, s)
		}
	}
}
