package engine

import (
	"log/slog"

	"github.com/promptforge-go/promptforge/internal/logtext"
)

// Observers is one Observer that hands every event to each of obs in turn;
// nil entries are skipped. Hosts compose their observers with it (progress
// forwarding, log narration, a test's recorder) instead of wrapping one in
// another. Like every Observer it must not block, so each of obs must not.
func Observers(obs ...Observer) Observer {
	// One live observer (the common case: a server call without a
	// progress token) is returned as it is, without building a list.
	var one Observer
	n := 0
	for _, o := range obs {
		if o != nil {
			one = o
			n++
		}
	}
	if n == 1 {
		return one
	}
	var live multiObserver
	for _, o := range obs {
		if o != nil {
			live = append(live, o)
		}
	}
	return live
}

type multiObserver []Observer

func (m multiObserver) Observe(ev Event) {
	for _, o := range m {
		o.Observe(ev)
	}
}

// Narration is how LogObserver tells a run: the one event→log policy every
// host uses, so a change in what an operator reads touches this file only.
// Hosts differ in two ways only, both chosen here: how loudly they follow a
// run's progress, and whether the lines may carry what the prompt's author
// wrote.
type Narration struct {
	// Progress is the level of the lines that follow a run's progress:
	// each section starting, each completed model turn, each tool call
	// that succeeded, and the prompt's log() lines. The run command shows
	// them at info; the server keeps them at debug, since it runs many
	// prompts at once for callers who get their progress over MCP.
	Progress slog.Level
	// AuthorText adds what the author wrote: the section heading (the
	// "section" attribute, the prompt's title for run-level events) and
	// the text of log() lines. Without it no line carries anything an
	// author wrote (the server's promise, mcp-server §1.3): a log()
	// line is then told as "Lua", without its text.
	AuthorText bool
}

// LogObserver narrates a run's events on logger, with one vocabulary: the
// message is the event's fixed text (Detail.String(): "Run started",
// "Model turn failed", ...) or, with AuthorText, a log() line's own text.
// Levels:
//
//   - info: the run starting;
//   - warn: a model turn or a tool call failing, and the run failing;
//   - n.Progress: section starts, completed model turns, successful tool
//     calls and log() lines;
//   - debug: every other event (Lua phases, store operations, fanout arms).
//
// The lines carry no execution id: each host adds the attributes it keys
// runs by (logger.With) if it wants them.
func LogObserver(logger *slog.Logger, n Narration) Observer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return logObserver{log: logger, n: n}
}

type logObserver struct {
	log *slog.Logger
	n   Narration
}

func (o logObserver) Observe(ev Event) {
	level := slog.LevelDebug
	switch ev.Detail {
	case RunStarted:
		level = slog.LevelInfo
	case ModelTurnFailed, ToolCallFailed, RunFailed:
		level = slog.LevelWarn
	case SectionStarted, ModelTurnCompleted, ToolCallSucceeded, DetailLua:
		level = o.n.Progress
	}
	// Through logtext.LogAttrs, which checks Enabled first (a server at
	// info pays nothing for the debug events that make up most of a run)
	// and skips slog.Logger's caller lookup.
	if !o.n.AuthorText {
		logtext.LogAttrs(o.log.Handler(), level, ev.Detail.String())
		return
	}
	logtext.LogAttrs(o.log.Handler(), level, ev.String(), slog.String("section", ev.Section))
}
