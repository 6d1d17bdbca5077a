// Package logtext is the server's stderr log handler: slog.TextHandler's
// output, byte for byte, with the common records formatted by hand.
//
// Every run writes two info lines (mcp-server §1.3: "Run started" and "run
// reached its terminal state"), and on the stdio path slog.TextHandler's
// formatting of them was about a tenth of the server's instructions per
// Lua-only run_prompt (docs/benchmarks.md, "The stdio fast lane"): its
// general value switch, quoting through strconv for every message with a
// space, and time.AppendFormat of the timestamp. Handler formats records
// whose attributes are strings, integers, floats, booleans, durations and
// times, with no group open, itself, and keeps the timestamp's date, clock
// and zone for the second it was last formatted in, so a record within the
// same second appends only its milliseconds. Everything else (a group, an
// attribute of any other kind, an empty key, ReplaceAttr, AddSource) goes
// to a slog.TextHandler holding the same attributes, so what the fast path
// does not cover is exactly what slog writes. FuzzHandlerMatchesText holds
// the two to the same bytes.
//
// The package keeps no goroutines and no package-level state: a Handler's
// buffers and timestamp are shared by the handlers derived from it
// (WithAttrs, WithGroup), as its writer and lock are.
package logtext

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Handler writes slog records as slog.TextHandler does; see the package doc.
type Handler struct {
	root  *root
	level slog.Leveler // nil: info
	// text is a slog.TextHandler with this handler's attributes and
	// groups, writing through root's lock: what the fast path does not
	// format goes there.
	text slog.Handler
	// pre is " key=value" for each attribute added by WithAttrs, as
	// TextHandler preformats them; meaningless when slow.
	pre []byte
	// slow is set once a group is open or an added attribute is not one
	// the fast path formats: every record then goes to text.
	slow bool
}

// root is what a handler shares with those derived from it.
type root struct {
	mu    sync.Mutex
	w     io.Writer
	bufs  sync.Pool // *[]byte
	stamp atomic.Pointer[stamp]
}

// stamp is a timestamp's text for one second in one location: the date
// and clock before the milliseconds, and the zone after them. Zone
// offsets change only on whole seconds, so every instant of that second
// in that location shares them.
type stamp struct {
	sec    int64
	loc    *time.Location
	prefix string // "2006-01-02T15:04:05"
	zone   string // "Z" or "-07:00"
}

// lockedWriter is root's writer under root's lock, for the TextHandler:
// its lines and the fast path's are written one whole line at a time.
type lockedWriter struct{ r *root }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.w.Write(p)
}

// New returns a handler writing to w as slog.NewTextHandler(w, opts)
// would. With opts.ReplaceAttr or opts.AddSource, whose output depends on
// more than the record, it is that TextHandler itself.
func New(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if opts.ReplaceAttr != nil || opts.AddSource {
		return slog.NewTextHandler(w, opts)
	}
	r := &root{w: w}
	r.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	return &Handler{root: r, level: opts.Level, text: slog.NewTextHandler(lockedWriter{r}, opts)}
}

// Enabled reports whether level is at or above the handler's minimum
// (info without one), as TextHandler does.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	min := slog.LevelInfo
	if h.level != nil {
		min = h.level.Level()
	}
	return level >= min
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.text = h.text.WithAttrs(attrs)
	if !h.slow {
		pre := append([]byte(nil), h.pre...)
		for _, a := range attrs {
			var ok bool
			if pre, ok = appendAttr(pre, a); !ok {
				h2.slow = true
				break
			}
		}
		h2.pre = pre
	}
	return &h2
}

// WithGroup returns a handler that puts later attributes in group name;
// its records are all TextHandler's.
func (h *Handler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.text = h.text.WithGroup(name)
	// Even "" (which slog.Logger never passes on): TextHandler's
	// output for it is its own.
	h2.slow = true
	return &h2
}

// Handle writes r in one Write, as TextHandler does.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if h.slow {
		return h.text.Handle(ctx, r)
	}
	bp, b := h.begin(r.Time, r.Level, r.Message)
	defer h.root.putBuf(bp)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	if !ok {
		return h.text.Handle(ctx, r)
	}
	return h.end(bp, b)
}

// handleAttrs is Handle for the record of t, level, msg and attrs without
// making one (LogAttrs): a slog.Record holds five attributes inline and
// allocates for more, as the run's terminal line has (issue #12). It
// reports false, having written nothing, when the fast path does not
// format the record; the caller then makes one for Handle.
func (h *Handler) handleAttrs(t time.Time, level slog.Level, msg string, attrs []slog.Attr) (bool, error) {
	if h.slow {
		return false, nil
	}
	bp, b := h.begin(t, level, msg)
	defer h.root.putBuf(bp)
	for _, a := range attrs {
		var ok bool
		if b, ok = appendAttr(b, a); !ok {
			return false, nil
		}
	}
	return true, h.end(bp, b)
}

// begin takes a buffer and appends a line's time, level, message and the
// handler's own attributes; give the buffer back with root.putBuf.
func (h *Handler) begin(t time.Time, level slog.Level, msg string) (*[]byte, []byte) {
	bp := h.root.bufs.Get().(*[]byte)
	b := (*bp)[:0]
	if !t.IsZero() {
		b = append(b, "time="...)
		b = h.root.appendTime(b, t)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendString(b, level.String())
	b = append(b, " msg="...)
	b = appendString(b, msg)
	return bp, append(b, h.pre...)
}

// end writes the line b, begun in bp, under the writer's lock.
func (h *Handler) end(bp *[]byte, b []byte) error {
	b = append(b, '\n')
	*bp = b
	h.root.mu.Lock()
	defer h.root.mu.Unlock()
	_, err := h.root.w.Write(b)
	return err
}

// putBuf keeps a line's buffer for the next, unless a long line grew it.
func (rt *root) putBuf(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		*bp = (*bp)[:0]
		rt.bufs.Put(bp)
	}
}

// appendAttr appends " key=value" as TextHandler would, or reports that
// it is not one the fast path formats (ok false: b is then not to be
// used).
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" {
		// TextHandler drops an empty attribute and writes the rest
		// under an empty key; neither is worth a copy of its rules.
		return b, false
	}
	b = append(b, ' ')
	b = appendString(b, a.Key)
	b = append(b, '=')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		b = appendString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		b = strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = append(b, v.Duration().String()...)
	case slog.KindTime:
		b = appendRFC3339Millis(b, v.Time())
	default:
		return b, false
	}
	return b, true
}

// appendTime appends t as appendRFC3339Millis does, from the stamp of
// its second when it has one.
func (r *root) appendTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := r.stamp.Load()
	if s == nil || s.sec != sec || s.loc != loc {
		// The date, clock and zone of this second, from the formatter
		// slog uses; the milliseconds are cut out of it.
		full := string(appendRFC3339Millis(nil, t))
		dot := strings.LastIndexByte(full, '.') // the zone has none
		s = &stamp{sec: sec, loc: loc, prefix: full[:dot], zone: full[dot+len(".000"):]}
		r.stamp.Store(s)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, s.prefix...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// appendRFC3339Millis is log/slog's: RFC 3339 with exactly three digits
// of milliseconds, truncated.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// appendString appends s as TextHandler does: as it is, or quoted by
// strconv when it needs quoting. A string of printable ASCII with no
// quote or backslash is quoted here without strconv, which would write
// the same bytes.
func appendString(b []byte, s string) []byte {
	plain, simple := scan(s)
	switch {
	case plain:
		return append(b, s...)
	case simple:
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}

// scan reports whether s is written as it is (plain: log/slog's
// needsQuoting is false) and, if not, whether its quoted form is s between
// two quotes (simple: printable ASCII without '"' or '\'). ASCII is
// classified a byte at a time through asciiClass; a string with anything
// else takes needsQuoting's rune walk, and strconv.
func scan(s string) (plain, simple bool) {
	if s == "" {
		return false, true
	}
	var acc uint8
	for i := 0; i < len(s); i++ {
		acc |= asciiClass[s[i]]
	}
	if acc&nonASCII == 0 {
		return acc&quoted == 0, acc&escaped == 0
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiClass[c]&quoted != 0 {
				return false, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false, false
		}
		i += size
	}
	return true, false
}

// The classes of a byte for scan.
const (
	quoted   = 1 << iota // needsQuoting quotes a string with it
	escaped              // strconv.Quote escapes it
	nonASCII             // a byte of a multi-byte rune (or not UTF-8)
)

// asciiClass classifies each byte as log/slog's needsQuoting and strconv
// see it: ' ' and '=' are quoted but not escaped, '"' and the controls
// both, '\' and 0x7f (which needsQuoting lets through: 0x7f is in slog's
// safe set) only escaped.
var asciiClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = nonASCII
		case c == ' ' || c == '=':
			t[c] = quoted
		case c == '"' || c < ' ':
			t[c] = quoted | escaped
		case c == '\\' || c == 0x7f:
			t[c] = escaped
		}
	}
	return t
}()

// LogAttrs writes a record of level, msg and attrs to h, if h is enabled
// for level, as slog.Logger.LogAttrs would, but without the caller's
// program counter: the Logger finds it with runtime.Callers on every line
// (about 3,000 instructions, docs/benchmarks.md "The stdio fast lane"),
// and only a handler with AddSource reads it. The server's loggers never
// set AddSource (cmd/promptforge-mcp-server/prologue.go), so the lines a
// run writes on every call (mcp-server §1.3) come here; a logger that
// needs the source uses slog.Logger as usual.
func LogAttrs(h slog.Handler, level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !h.Enabled(ctx, level) {
		return
	}
	logAttrsAt(h, time.Now(), level, msg, attrs)
}

// LogAttrsAt is LogAttrs for a record made at t, for a caller that has
// just read the clock for what the line reports (the registry's terminal
// line: the run's end), so that the line costs no second reading.
func LogAttrsAt(h slog.Handler, t time.Time, level slog.Level, msg string, attrs ...slog.Attr) {
	if !h.Enabled(context.Background(), level) {
		return
	}
	logAttrsAt(h, t, level, msg, attrs)
}

// logAttrsAt is LogAttrs at t, once h is known to be enabled: a Handler
// writes the line without a slog.Record when it can (handleAttrs).
func logAttrsAt(h slog.Handler, t time.Time, level slog.Level, msg string, attrs []slog.Attr) {
	if lh, ok := h.(*Handler); ok {
		if done, _ := lh.handleAttrs(t, level, msg, attrs); done {
			return
		}
	}
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(context.Background(), r)
}
