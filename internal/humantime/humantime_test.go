package humantime

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	const (
		day   = 24 * time.Hour
		month = 2_630_016 * time.Second
		year  = 31_557_600 * time.Second
	)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"0s", 0},
		{"30s", 30 * time.Second},
		{"240s", 240 * time.Second},
		{"1h", time.Hour},
		{"500ms", 500 * time.Millisecond},
		{"1h 30m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"  2m  ", 2 * time.Minute},
		{"10 s", 10 * time.Second},
		{"1 0s", 10 * time.Second}, // humantime skips whitespace inside a number
		{"3ns", 3}, {"3nsec", 3}, {"3nanos", 3},
		{"4us", 4 * time.Microsecond}, {"4usec", 4 * time.Microsecond}, {"4µs", 4 * time.Microsecond},
		{"5ms", 5 * time.Millisecond}, {"5msec", 5 * time.Millisecond}, {"5millis", 5 * time.Millisecond},
		{"6s", 6 * time.Second}, {"6sec", 6 * time.Second}, {"6secs", 6 * time.Second},
		{"6second", 6 * time.Second}, {"6seconds", 6 * time.Second},
		{"7m", 7 * time.Minute}, {"7min", 7 * time.Minute}, {"7mins", 7 * time.Minute},
		{"7minute", 7 * time.Minute}, {"7minutes", 7 * time.Minute},
		{"8h", 8 * time.Hour}, {"8hr", 8 * time.Hour}, {"8hrs", 8 * time.Hour},
		{"8hour", 8 * time.Hour}, {"8hours", 8 * time.Hour},
		{"2d", 2 * day}, {"2day", 2 * day}, {"2days", 2 * day},
		{"1w", 7 * day}, {"1week", 7 * day}, {"2weeks", 14 * day},
		{"1M", month}, {"1month", month}, {"2months", 2 * month},
		{"1y", year}, {"1year", year}, {"2years", 2 * year},
		{"1y 2M 3d 4h 5m 6s 7ms 8us 9ns", year + 2*month + 3*day + 4*time.Hour + 5*time.Minute + 6*time.Second +
			7*time.Millisecond + 8*time.Microsecond + 9},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"30", "needs a unit"},
		{"1h 30", "needs a unit"},
		{"5x", `unknown unit "x"`},
		{"5S", `unknown unit "S"`}, // case-sensitive
		{"5H", `unknown unit "H"`},
		{"-5s", "expected a number"},
		{"+5s", "expected a number"},
		{"1.5h", "fraction"},
		{"s", "expected a number"},
		{"5s,", "unexpected character"},
		{"5s 6", "needs a unit"},
		{"not-a-duration", "expected a number"},
		{"300y", "too long"},
		{"99999999999999999999999s", "too long"},
	}
	for _, tc := range cases {
		d, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want an error containing %q", tc.in, d, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{240 * time.Second, "4m"},
		{3600 * time.Second, "1h"},
		{5400 * time.Second, "1h 30m"},
		{500 * time.Millisecond, "500ms"},
		{1500 * time.Millisecond, "1s 500ms"},
		{time.Microsecond + 1, "1us 1ns"},
		{24 * time.Hour, "1day"},
		{48*time.Hour + time.Second, "2days 1s"},
		{2_630_016 * time.Second, "1month"},
		{2 * 2_630_016 * time.Second, "2months"},
		{31_557_600 * time.Second, "1year"},
		{2*31_557_600*time.Second + 2_630_016*time.Second + 86400*time.Second, "2years 1month 1day"},
		{-30 * time.Second, "-30s"},
		// The catalog's watcher log line's cases (its copy of the
		// formatter is gone).
		{90 * time.Minute, "1h 30m"},
		{48*time.Hour + time.Nanosecond, "2days 1ns"},
	}
	for _, tc := range cases {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRoundTrip checks that whatever Parse accepts,
// Format renders in a form that parses back to the same duration.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"0s", "30s", "1h 30m", "1h30m", "500ms", "2years 1month 1day", "1y2M3w4d5h6m7s8ms9us10ns", "7µs", "292y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		out := Format(d)
		back, err := Parse(out)
		if err != nil || back != d {
			t.Fatalf("Parse(%q) = %v; Format = %q; parses back to %v, %v", s, d, out, back, err)
		}
	})
}

// FuzzFormat checks every non-negative duration round-trips.
func FuzzFormat(f *testing.F) {
	for _, n := range []int64{0, 1, 999, 1e9, 5400e9, 31_557_600e9 + 1, 1<<63 - 1} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 0 {
			n = -(n + 1)
		}
		d := time.Duration(n)
		out := Format(d)
		back, err := Parse(out)
		if err != nil || back != d {
			t.Fatalf("Format(%d) = %q parses back to %v, %v", n, out, back, err)
		}
	})
}
