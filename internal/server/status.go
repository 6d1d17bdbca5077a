package server

import (
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// The status page (issue #15): the catalog with each broken prompt's
// reason, the runs in flight and the recent ones, and one run's trace as a
// timeline. Plain server-rendered HTML that refreshes itself with a meta
// refresh, so it needs no script and holds no connection open. It shows no
// secret, and no prompt, reply, argument or log text unless
// [observability] capture_content is on (the trace holds none otherwise).
// The transport mounts it under /status/ behind the bearer token or the
// login cookie (transport/status.go).

//go:embed status/*.html status/*.css
var statusFiles embed.FS

var statusTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"ms":    msOf,
	"since": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"pct":   func(v float64) string { return fmt.Sprintf("%.3f%%", v) },
}).ParseFS(statusFiles, "status/*.html"))

const (
	statusRefresh = 2 // seconds between refreshes of a page that changes
	recentRuns    = 50
)

// StatusHandler serves the status page; its paths are under prefix (the
// transport's StatusPath, "/status/").
func (s *Server) StatusHandler(prefix string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prefix+"{$}", s.statusOverview)
	mux.HandleFunc("GET "+prefix+"style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		b, _ := statusFiles.ReadFile("status/style.css")
		w.Write(b)
	})
	mux.HandleFunc("GET "+prefix+"runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if strings.HasSuffix(id, ".json") {
			s.TraceHandler(prefix+"runs/").ServeHTTP(w, r)
			return
		}
		s.statusRun(w, id)
	})
	return mux
}

type catalogRow struct {
	Name, Description, Problem string
	Broken                     bool
}

type overview struct {
	Refresh   int
	Prompts   []catalogRow
	Broken    int
	TracesOff bool
	InFlight  []runtrace.Summary
	Recent    []runtrace.Summary
	Running   int
	Capture   bool
}

func (s *Server) statusOverview(w http.ResponseWriter, r *http.Request) {
	cat := s.catalog.Current().Catalog()
	v := overview{Refresh: statusRefresh, Broken: cat.BrokenCount(), TracesOff: s.traces == nil, Running: s.runs.Stats().InFlight}
	for _, e := range cat.All() {
		v.Prompts = append(v.Prompts, catalogRow{Name: e.Name(), Description: e.Description(), Problem: e.Problem(), Broken: e.Broken()})
	}
	if s.traces != nil {
		v.InFlight, v.Recent = s.traceRuns(recentRuns)
		v.Capture = s.traces.CaptureContent()
	}
	render(w, "overview.html", v)
}

// timelineRow is one step as the timeline draws it.
type timelineRow struct {
	runtrace.Step
	Depth       int
	Left, Width float64 // percent of the run's duration
	Duration    string
}

type timeline struct {
	Refresh int // 0: the run has ended, no refresh
	Trace   runtrace.Trace
	Rows    []timelineRow
}

func (s *Server) statusRun(w http.ResponseWriter, id string) {
	t, ok := s.Trace(id)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		render(w, "missing.html", id)
		return
	}
	v := timeline{Trace: t}
	if t.Status == runtrace.StatusRunning {
		v.Refresh = statusRefresh
	}
	total := float64(t.DurationMS)
	for _, st := range t.Steps {
		total = max(total, st.EndMS, st.StartMS)
	}
	total = max(total, 1)
	depth := map[int]int{}
	for _, st := range t.Steps {
		d := 0
		if st.Parent != 0 {
			d = depth[st.Parent] + 1
		}
		depth[st.ID] = d
		end := st.EndMS
		if end == 0 {
			end = total
		}
		row := timelineRow{Step: st, Depth: d, Left: 100 * st.StartMS / total, Width: max(100*(end-st.StartMS)/total, 0.4)}
		if st.EndMS != 0 {
			row.Duration = formatMS(st.EndMS - st.StartMS)
		}
		v.Rows = append(v.Rows, row)
	}
	render(w, "timeline.html", v)
}

func render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// A page is small; rendering into the response directly, a template
	// error shows as a cut page, which is all an operator could do with it.
	statusTemplates.ExecuteTemplate(w, name, data)
}

// msOf is formatMS for the templates, which hold int64 and float64
// milliseconds.
func msOf(v any) string {
	switch n := v.(type) {
	case int64:
		return formatMS(float64(n))
	case float64:
		return formatMS(n)
	}
	return fmt.Sprint(v)
}

// formatMS renders milliseconds for people: 840 ms, 12.4 s, 3 m 05 s.
func formatMS(ms float64) string {
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	s := int(ms / 1000)
	return fmt.Sprintf("%d m %02d s", s/60, s%60)
}
