package config

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// The raw schema mirrors prompts.toml one to one. Every leaf is a pointer
// (or a nil-able slice) so "absent" and "written" stay distinct until the
// defaults are applied, and durations are strings because their syntax is
// ours to check. The decoder refuses any key not declared here.
type rawConfig struct {
	Server    *rawServer          `toml:"server"`
	Paths     *rawPaths           `toml:"paths"`
	Gateway   *rawGateway         `toml:"gateway"`
	Catalog   *rawCatalog         `toml:"catalog"`
	Tools     *rawTools           `toml:"tools"`
	Limits    *rawLimits          `toml:"limits"`
	Runs      *rawRuns            `toml:"runs"`
	Retrieval *rawRetrieval       `toml:"retrieval"`
	Prompts   map[string]rawBlock `toml:"prompts"`
	Models    map[string]rawModel `toml:"models"`

	Observability *rawObservability `toml:"observability"`
}

type rawServer struct {
	Bind              *string   `toml:"bind"`
	AllowedHosts      *[]string `toml:"allowed_hosts"`
	APIKey            *string   `toml:"api_key"`
	MaxConcurrentRuns *int64    `toml:"max_concurrent_runs"`
	AllowedOrigins    *[]string `toml:"allowed_origins"`
	MaxSessions       *int64    `toml:"max_sessions"`
	AdmissionTimeout  *string   `toml:"admission_timeout"`
	ReplyDeadline     *string   `toml:"reply_deadline"`
	RetainCompleted   *string   `toml:"retain_completed"`
	Watch             *bool     `toml:"watch"`
	WatchDebounce     *string   `toml:"watch_debounce"`
}

type rawPaths struct {
	// Prompts is a string or an array of strings; buildPaths checks which.
	Prompts any       `toml:"prompts"`
	Files   *[]string `toml:"files"`
}

type rawGateway struct {
	URL            *string `toml:"url"`
	APIKey         *string `toml:"api_key"`
	Timeout        *string `toml:"timeout"`
	RequestTimeout *string `toml:"request_timeout"`
	ThinkingSwitch *string `toml:"thinking_switch"`
	Refresh        *string `toml:"refresh"`
}

type rawCatalog struct {
	Include []string `toml:"include"`
	Exclude []string `toml:"exclude"`
	Tools   []string `toml:"tools"`
}

type rawTools struct {
	WebFetch *bool `toml:"web_fetch"`
	// WebSearch is a boolean or the [tools.web_search] table
	// (buildWebSearch checks which).
	WebSearch any `toml:"web_search"`
}

// rawLimits is [limits]: sizes are strings ("64MiB") whose syntax is ours.
type rawLimits struct {
	MaxRunMemory   *string `toml:"max_run_memory"`
	MaxRequestSize *string `toml:"max_request_size"`
	ProcessMemory  *string `toml:"process_memory"`
}

type rawBlock struct {
	Enabled *bool   `toml:"enabled"`
	File    *string `toml:"file"`
}

type rawModel struct {
	Description    *string `toml:"description"`
	Context        *int64  `toml:"context"`
	Thinking       *string `toml:"thinking"`
	ToolDialect    *string `toml:"tool_dialect"`
	ThinkingSwitch *string `toml:"thinking_switch"`
}

// tableKeys lists the keys a table takes, for the "unknown key" message;
// table is the path of the table in the document. ok is false for a path
// that is not a table of the schema.
func tableKeys(table tomlPath) (keys []string, ok bool) {
	switch {
	case len(table) == 0:
		return []string{"server", "paths", "gateway", "catalog", "tools", "runs", "limits", "prompts", "models", "retrieval", "observability"}, true
	case len(table) == 1:
		switch table[0] {
		case "server":
			return []string{"bind", "allowed_hosts", "api_key", "max_concurrent_runs", "admission_timeout",
				"reply_deadline", "retain_completed", "watch", "watch_debounce", "allowed_origins", "max_sessions"}, true
		case "paths":
			return []string{"prompts", "files"}, true
		case "gateway":
			return []string{"url", "api_key", "timeout", "request_timeout", "thinking_switch", "refresh"}, true
		case "catalog":
			return []string{"include", "exclude", "tools"}, true
		case "tools":
			return []string{"web_fetch", "web_search"}, true
		case "runs":
			return runsKeys, true
		case "retrieval":
			return []string{"embeddings_model", "cache", "timeout", "tools", "models", "prompts"}, true
		case "limits":
			return []string{"max_run_memory", "max_request_size", "process_memory"}, true
		case "observability":
			return observabilityKeys, true
		}
	case len(table) == 2 && table[0] == "retrieval" && slices.Contains([]string{"tools", "models", "prompts"}, table[1]):
		return thresholdKeys, true
	case len(table) == 2 && table[0] == "prompts":
		return []string{"enabled", "file"}, true
	case len(table) == 2 && table[0] == "models":
		return []string{"description", "context", "thinking", "tool_dialect", "thinking_switch"}, true
	}
	return nil, false
}

// expectedType says what a key's value must be, for type-mismatch messages.
func expectedType(p tomlPath) string {
	const (
		duration = `a duration string such as "30s" or "1h 30m"`
		boolean  = "true or false"
		str      = "a string"
		strings_ = "an array of strings"
		table    = "a table"
	)
	switch {
	case len(p) == 1:
		return table
	case len(p) == 2 && (p[0] == "prompts" || p[0] == "models"):
		return table
	case len(p) == 2 && p[0] == "retrieval" && (p[1] == "tools" || p[1] == "models" || p[1] == "prompts"):
		return table
	case len(p) == 3 && p[0] == "retrieval":
		return "a number from 0 to 1"
	case len(p) == 3 && p[0] == "prompts":
		if p[2] == "enabled" {
			return boolean
		}
		return str
	case len(p) == 3 && p[0] == "models":
		if p[2] == "context" {
			return "a positive integer (the context window in tokens)"
		}
		return str
	case len(p) != 2:
		return ""
	case p[0] == "runs":
		return runsExpectedType(p[1])
	case p[0] == "observability":
		return observabilityType(p[1])
	}
	switch p[0] + "." + p[1] {
	case "server.bind":
		return `a string such as "127.0.0.1:9310"`
	case "server.max_concurrent_runs", "server.max_sessions":
		return "a positive integer"
	case "server.admission_timeout", "server.reply_deadline", "server.retain_completed",
		"server.watch_debounce", "gateway.timeout", "gateway.request_timeout", "gateway.refresh", "retrieval.timeout":
		return duration
	case "server.watch", "tools.web_fetch":
		return boolean
	case "tools.web_search":
		return "true, false or a table"
	case "server.allowed_hosts", "server.allowed_origins", "paths.files", "catalog.include", "catalog.exclude", "catalog.tools":
		return strings_
	case "paths.prompts":
		return "a string or an array of strings"
	case "limits.max_run_memory", "limits.max_request_size", "limits.process_memory":
		return `a size string such as "64MiB"`
	case "server.api_key", "gateway.url", "gateway.api_key", "gateway.thinking_switch", "retrieval.embeddings_model", "retrieval.cache":
		return str
	}
	return ""
}

// keyName renders a key path in TOML notation: the table in brackets, then
// the key ("[server].bind", "[prompts.x].file", `[models."gpt-4o"]`).
func keyName(p tomlPath) string {
	switch len(p) {
	case 0:
		return "the document"
	case 1:
		return "[" + quoteKey(p[0]) + "]"
	}
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = quoteKey(k)
	}
	if p[0] == "prompts" || p[0] == "models" {
		if len(p) == 2 {
			return "[" + strings.Join(parts, ".") + "]"
		}
		return "[" + strings.Join(parts[:2], ".") + "]." + strings.Join(parts[2:], ".")
	}
	return "[" + parts[0] + "]." + strings.Join(parts[1:], ".")
}

// quoteKey writes a key bare when TOML allows it, quoted otherwise.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(isASCIILetter(c) || isDigit(c) || c == '_' || c == '-') {
			return strconv.Quote(k)
		}
	}
	return k
}

// keyLines maps each key path written in the document to the line it is
// written on, so validation messages can point at the line.
type keyLines struct {
	lines map[string]int
}

func pathID(p tomlPath) string { return strings.Join(p, "\x00") }

// line returns the line p (or, failing that, its nearest enclosing table)
// is written on; 0 when unknown.
func (k keyLines) line(p tomlPath) int {
	for n := len(p); n > 0; n-- {
		if l, ok := k.lines[pathID(p[:n])]; ok {
			return l
		}
	}
	return 0
}

// indexKeyLines records where each key of a syntactically valid document
// is. It is best effort: on a parse error it returns what it has.
func indexKeyLines(data []byte) keyLines {
	idx := keyLines{lines: map[string]int{}}
	var starts []int // byte offset of each line start
	starts = append(starts, 0)
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(r unstable.Range) int {
		return sort.SearchInts(starts, int(r.Offset)+1)
	}
	record := func(p tomlPath, line int) {
		id := pathID(p)
		if _, seen := idx.lines[id]; !seen {
			idx.lines[id] = line
		}
	}
	keyOf := func(n *unstable.Node) (tomlPath, int) {
		var p tomlPath
		line := 0
		it := n.Key()
		for it.Next() {
			kn := it.Node()
			if line == 0 {
				line = lineOf(kn.Raw)
			}
			p = append(p, string(kn.Data))
		}
		return p, line
	}
	var walkValue func(prefix tomlPath, v *unstable.Node)
	walkValue = func(prefix tomlPath, v *unstable.Node) {
		if v == nil || v.Kind != unstable.InlineTable {
			return
		}
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			k, line := keyOf(kv)
			full := append(slices.Clip(prefix), k...)
			for i := len(prefix) + 1; i <= len(full); i++ {
				record(full[:i], line)
			}
			walkValue(full, kv.Value())
		}
	}

	var p unstable.Parser
	p.Reset(data)
	var table tomlPath
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k, line := keyOf(e)
			table = k
			for i := 1; i <= len(k); i++ {
				record(k[:i], line)
			}
		case unstable.KeyValue:
			k, line := keyOf(e)
			full := append(slices.Clip(table), k...)
			for i := len(table) + 1; i <= len(full); i++ {
				record(full[:i], line)
			}
			walkValue(full, e.Value())
		}
	}
	return idx
}
