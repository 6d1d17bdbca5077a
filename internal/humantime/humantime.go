package humantime

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Seconds in the calendar units humantime uses: a month is 30.44 days and
// a year 365.25 days, so "1M" and "1y" are exact second counts.
const (
	secondsPerMonth = 2_630_016
	secondsPerYear  = 31_557_600
)

// unitNanos maps every unit spelling humantime 2 accepts (mcp-server §2.4) to
// its length. Units are case-sensitive: "M" is a month, "m" a minute.
func unitNanos(unit string) (int64, bool) {
	switch unit {
	case "ns", "nsec", "nanos":
		return 1, true
	case "us", "usec", "µs":
		return int64(time.Microsecond), true
	case "ms", "msec", "millis":
		return int64(time.Millisecond), true
	case "s", "sec", "secs", "second", "seconds":
		return int64(time.Second), true
	case "m", "min", "mins", "minute", "minutes":
		return int64(time.Minute), true
	case "h", "hr", "hrs", "hour", "hours":
		return int64(time.Hour), true
	case "d", "day", "days":
		return 24 * int64(time.Hour), true
	case "w", "week", "weeks":
		return 7 * 24 * int64(time.Hour), true
	case "M", "month", "months":
		return secondsPerMonth * int64(time.Second), true
	case "y", "year", "years":
		return secondsPerYear * int64(time.Second), true
	}
	return 0, false
}

var errDurationTooLong = errors.New("the duration is too long (the limit is about 292 years)")

// Parse reads a duration in humantime syntax: one or more
// <integer><unit> items ("30s", "1h 30m", "1h30m", "500ms"), whitespace
// allowed around numbers and units. A bare number, an unknown unit, a sign,
// a fraction and an empty string are errors. Go's time.ParseDuration is not
// used because it accepts signs and fractions and lacks d/w/M/y.
func Parse(s string) (time.Duration, error) {
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	if rest == "" {
		return 0, errors.New(`the duration is empty; write it like "30s", "1h 30m" or "500ms"`)
	}
	var total int64
	for rest != "" {
		offset := len(s) - len(rest)
		// The number: digits, possibly with whitespace between them, as
		// humantime allows.
		var n uint64
		digits := 0
		i := 0
		for i < len(rest) {
			c := rest[i]
			if c >= '0' && c <= '9' {
				if n > (math.MaxUint64-9)/10 {
					return 0, errDurationTooLong
				}
				n = n*10 + uint64(c-'0')
				digits++
				i++
				continue
			}
			if r, size := utf8.DecodeRuneInString(rest[i:]); unicode.IsSpace(r) {
				i += size
				continue
			}
			break
		}
		if digits == 0 {
			return 0, fmt.Errorf("expected a number at byte %d of %q", offset, s)
		}
		rest = rest[i:]
		// The unit: ASCII letters and µ.
		j := 0
		for j < len(rest) {
			c := rest[j]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				j++
				continue
			}
			if strings.HasPrefix(rest[j:], "µ") {
				j += len("µ")
				continue
			}
			break
		}
		unit := rest[:j]
		unitAt := len(s) - len(rest)
		rest = rest[j:]
		if unit == "" {
			if rest != "" && rest[0] == '.' {
				return 0, fmt.Errorf("%q has a fraction, which durations do not take; write \"1h 30m\" rather than \"1.5h\"", s)
			}
			if rest != "" {
				return 0, fmt.Errorf("unexpected character %q at byte %d of %q", firstRune(rest), unitAt, s)
			}
			return 0, fmt.Errorf("%q needs a unit after %d, for example %ds or %dms", s, n, n, n)
		}
		size, ok := unitNanos(unit)
		if !ok {
			return 0, fmt.Errorf("unknown unit %q in %q; use ns, us, ms, s, m, h, d, w, M (months) or y", unit, s)
		}
		if n > uint64(math.MaxInt64/size) {
			return 0, errDurationTooLong
		}
		add := int64(n) * size
		if total > math.MaxInt64-add {
			return 0, errDurationTooLong
		}
		total += add
		// After a unit: whitespace, the next number, or the end.
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest != "" && !isDigit(rest[0]) {
			return 0, fmt.Errorf("unexpected character %q at byte %d of %q", firstRune(rest), len(s)-len(rest), s)
		}
	}
	return time.Duration(total), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

// Format renders d the way humantime's format_duration does, which is how
// the reference shows durations to callers (mcp-server §2.4): components
// years, months, days, h, m, s, ms, us, ns; zero components left out; single
// spaces between them; "0s" for zero. 5400s is "1h 30m", 240s is "4m".
// The result always parses back to d with [Parse]. A negative d, which
// no setting can hold, renders as "-" and the magnitude.
func Format(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	mag := uint64(d)
	if d < 0 {
		b.WriteByte('-')
		mag = uint64(-(d + 1)) + 1 // safe for math.MinInt64
	}
	secs := mag / uint64(time.Second)
	nanos := mag % uint64(time.Second)

	years := secs / secondsPerYear
	secs %= secondsPerYear
	months := secs / secondsPerMonth
	secs %= secondsPerMonth
	days := secs / 86400
	secs %= 86400

	started := false
	item := func(n uint64, unit string, plural bool) {
		if n == 0 {
			return
		}
		if started {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(n, 10))
		b.WriteString(unit)
		if plural && n > 1 {
			b.WriteByte('s')
		}
		started = true
	}
	item(years, "year", true)
	item(months, "month", true)
	item(days, "day", true)
	item(secs/3600, "h", false)
	item(secs%3600/60, "m", false)
	item(secs%60, "s", false)
	item(nanos/1_000_000, "ms", false)
	item(nanos/1000%1000, "us", false)
	item(nanos%1000, "ns", false)
	return b.String()
}
