package match

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDocText(t *testing.T) {
	params := []string{"path", "offset", "encoding"}
	tests := []struct {
		name string
		doc  Doc
		want string
	}{
		{"sorted params", ToolDoc("fs", "read_file", "Read a file from disk", params),
			"read file. Read a file from disk. parameters: encoding, offset, path"},
		{"no params part when absent", ToolDoc("fs", "read_file", "Read a file from disk", nil),
			"read file. Read a file from disk"},
		{"no doubled separator for empty description", ToolDoc("fs", "read_file", "", []string{"path"}),
			"read file. parameters: path"},
		{"doubled period preserved", PromptDoc("stakeholder_position", "Build a stakeholder position report for one entity."),
			"stakeholder position. Build a stakeholder position report for one entity.. parameters: args"},
		{"model text", ModelDoc("vendor/big-1", "A careful model"), "model. A careful model"},
		{"bytewise sort", ToolDoc("s", "t", "d", []string{"b", "B", "a_b", "a"}), "t. d. parameters: B, a, a_b, b"},
		{"empty", Doc{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.doc.Text(); got != tt.want {
				t.Fatalf("Text() = %q, want %q", got, tt.want)
			}
		})
	}
	if !slices.Equal(params, []string{"path", "offset", "encoding"}) {
		t.Fatalf("ToolDoc reordered the caller's slice: %v", params)
	}
	a, b := ModelDoc("m1", "x"), ModelDoc("m2", "x")
	if a.Group == b.Group {
		t.Fatalf("two models share group %q; they could become Duplicate", a.Group)
	}
}

func TestTerms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"getForecast", "get forecast"},
		{"HTTPServer parseJSON v2Api", "http server pars json v2 api"},
		{"read_text_file", "read text fil"},
		{"Fetch a web page, and return ITS main content!", "fetch web pag return main cont"},
		{"events Event", "event event"},
		{"translation translate translating", "translat translat translat"},
		{"summarise summarize summarised", "summariz summariz summariz"},
		{"assistant assistance assist", "assist assist assist"},
		{"running runs", "run run"},
		{"added add adding", "add add add"},
		{"string strings", "string string"},
		{"speed agreed", "speed agreed"},
		{"stopped stop fetched fetch called", "stop stop fetch fetch call"},
		{"queries query", "query query"},
		{"Ünïcode wörds naïve", "ünïcode wörds naïve"},
		{"I need to know where", "know"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(appendTerms(nil, tt.in), " "); got != tt.want {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDocTermsMatchText guards the shortcut Index takes: tokenizing a
// doc's parts one by one must give exactly the terms of its Text, which
// is what a need is compared against and what embeddings see.
func TestDocTermsMatchText(t *testing.T) {
	docs := []Doc{
		ToolDoc("fs", "read_file", "Read a file from disk", []string{"path", "offset"}),
		ToolDoc("fs", "getForecast", "HTTPServer parseJSON", []string{"cityName", "v2Api"}),
		ToolDoc("fs", "read_file", "", []string{"path"}),
		PromptDoc("stakeholder_position", "Build a stakeholder position report for one entity."),
		ModelDoc("vendor/big-1", "A careful model"),
		{Name: "a_b_c", Description: "x. y, z: Ünïcode wörds"},
		{Description: "only a description"},
		{Params: []string{"a", "bB"}},
		{},
	}
	for _, f := range loadFixtures(t) {
		fd, _ := f.docs(t)
		docs = append(docs, fd...)
	}
	for _, d := range docs {
		var got []string
		var tok tokenizer
		docTerms(&tok, d, func(term []byte) { got = append(got, string(term)) })
		if want := appendTerms(nil, d.Text()); !slices.Equal(got, want) {
			t.Errorf("%+v: docTerms = %q, terms of Text() = %q", d, got, want)
		}
	}
}

// TestTokenizerDoesNotAllocate: Index tokenizes every doc of a catalog on
// each ranking change; a per-word allocation would come back as GC work
// on every reload of a large catalog.
func TestTokenizerDoesNotAllocate(t *testing.T) {
	var tok tokenizer
	text := "Summarize the HTTPServer logs: translations, running queries and parseJSON_events."
	n := 0
	tok.each(text, func([]byte) { n++ }) // grows the word buffer once
	if n == 0 {
		t.Fatal("no terms")
	}
	if allocs := testing.AllocsPerRun(100, func() { tok.each(text, func([]byte) { n++ }) }); allocs != 0 {
		t.Errorf("tokenizing allocates %v times per text, want 0", allocs)
	}
}

func lexIdx(t testing.TB, docs ...Doc) Index {
	t.Helper()
	idx, err := NewLexical().Index(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestLexicalScores(t *testing.T) {
	ctx := context.Background()
	docs := []Doc{
		ToolDoc("w", "get_forecast", "Get the weather forecast for a city.", []string{"city"}),
		ToolDoc("f", "read_file", "Read a text file from disk.", []string{"path"}),
		ToolDoc("f", "read_file", "Read a text file from disk.", []string{"path"}),
		ToolDoc("x", "", "", nil),
	}
	idx := lexIdx(t, docs...)
	if idx.Len() != 4 || idx.Doc(1).Name != "read_file" {
		t.Fatalf("Len/Doc do not reflect the indexed docs")
	}
	scores, err := idx.Score(ctx, docs[0].Text())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(scores[0]-1) > 1e-9 {
		t.Errorf("a need equal to the doc text scores %v, want 1", scores[0])
	}
	for i, s := range scores {
		if s < 0 || s > 1 {
			t.Errorf("score %d = %v, outside [0,1]", i, s)
		}
	}
	if scores[3] != 0 {
		t.Errorf("an empty doc scores %v, want 0", scores[3])
	}
	near, _ := idx.Score(ctx, "weather forecast for a city")
	far, _ := idx.Score(ctx, "weather forecast for a city, as a haiku about penguins")
	if !(near[0] > far[0] && far[0] > 0) {
		t.Errorf("weather need %v vs padded need %v: extra unrelated words should lower the score", near[0], far[0])
	}
	for _, need := range []string{"", "   ", "the of and to", "!!!"} {
		s, err := idx.Score(ctx, need)
		if err != nil || slices.ContainsFunc(s, func(f float64) bool { return f != 0 }) {
			t.Errorf("Score(%q) = %v, %v; want all zero", need, s, err)
		}
	}
	for i := range docs {
		for j := range docs {
			if a, b := idx.DocSimilarity(i, j), idx.DocSimilarity(j, i); a != b || a < 0 || a > 1 {
				t.Errorf("DocSimilarity(%d,%d)=%v, (%d,%d)=%v: want symmetric in [0,1]", i, j, a, j, i, b)
			}
		}
	}
	if s := idx.DocSimilarity(1, 2); math.Abs(s-1) > 1e-9 {
		t.Errorf("identical docs have similarity %v, want 1", s)
	}
	if s := idx.DocSimilarity(0, 1); s > 0.5 {
		t.Errorf("unrelated docs have similarity %v", s)
	}
}

// TestLexicalSharedTermsKeepWeight guards the smoothed IDF: in a catalog
// where every doc says "model", a need that only says "model" must still
// match, which plain IDF (log N/df = 0) would make impossible.
func TestLexicalSharedTermsKeepWeight(t *testing.T) {
	idx := lexIdx(t, ModelDoc("a", "A careful model"), ModelDoc("b", "A fast model"))
	s, err := idx.Score(context.Background(), "model")
	if err != nil || s[0] <= 0 || s[0] != s[1] {
		t.Fatalf("Score(model) = %v, %v; want equal positive scores", s, err)
	}
	one := lexIdx(t, ModelDoc("a", "A careful model"))
	if s, _ := one.Score(context.Background(), "careful"); s[0] <= 0 {
		t.Fatalf("one-doc catalog: Score(careful) = %v, want positive", s)
	}
}

func TestLexicalIsDeterministic(t *testing.T) {
	ctx := context.Background()
	docs := benchDocs()
	a, b := lexIdx(t, docs...), lexIdx(t, docs...)
	for _, need := range []string{"read a file", "send an email", "create an event"} {
		sa, _ := a.Score(ctx, need)
		sb, _ := b.Score(ctx, need)
		sa2, _ := a.Score(ctx, need)
		if !slices.Equal(sa, sb) || !slices.Equal(sa, sa2) {
			t.Fatalf("Score(%q) differs across builds or calls", need)
		}
		da, _ := Resolve(ctx, a, LexicalPolicy(), need)
		db, _ := Resolve(ctx, b, LexicalPolicy(), need)
		if da.Outcome != db.Outcome || !slices.Equal(da.Members, db.Members) {
			t.Fatalf("Resolve(%q) differs across builds", need)
		}
	}
}

func TestLexicalEmptyCatalog(t *testing.T) {
	ctx := context.Background()
	idx := lexIdx(t)
	if s, err := idx.Score(ctx, "anything"); err != nil || len(s) != 0 {
		t.Fatalf("Score on an empty catalog = %v, %v", s, err)
	}
	d, err := Resolve(ctx, idx, LexicalPolicy(), "anything")
	if err != nil || d.Outcome != Absent {
		t.Fatalf("Resolve on an empty catalog = %v, %v; want absent", d, err)
	}
	if sl, err := Shortlist(ctx, idx, RetrievalPolicy(), "anything", 3); err != nil || len(sl) != 0 {
		t.Fatalf("Shortlist on an empty catalog = %v, %v", sl, err)
	}
}

func TestLexicalHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLexical().Index(ctx, benchDocs()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Index on a cancelled context: %v", err)
	}
	idx := lexIdx(t, benchDocs()...)
	if _, err := Resolve(ctx, idx, LexicalPolicy(), "read a file"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve on a cancelled context: %v", err)
	}
}

// TestMixedServersNearDuplicates runs the scope check's pair test on the
// calibration catalog: the calendar twins are reported, the cross-server
// file readers are not.
func TestMixedServersNearDuplicates(t *testing.T) {
	f := loadFixtures(t)["mixed-servers"]
	docs, ids := f.docs(t)
	idx := lexIdx(t, docs...)
	all := make([]int, len(docs))
	for i := range all {
		all[i] = i
	}
	pairs, err := NearDuplicates(idx, LexicalPolicy(), all)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pairs {
		got = append(got, ids[p.A]+" ~ "+ids[p.B])
	}
	if want := []string{"calendar/create_event ~ calendar/add_event"}; !slices.Equal(got, want) {
		t.Fatalf("near duplicates = %q, want %q", got, want)
	}
}

// benchDocs is a ~20-tool catalog: the mixed-servers tools, the built-ins,
// and more distractors.
func benchDocs() []Doc {
	docs := []Doc{
		ToolDoc("promptforge", "web_fetch", "Fetch a web page and return its main content as markdown.", []string{"url", "max_chars", "raw"}),
		ToolDoc("promptforge", "web_search", "Search the web and return a list of results (title, url, description).", []string{"query", "count", "freshness", "country"}),
		ToolDoc("weather", "get_forecast", "Get the weather forecast for a city: temperature, precipitation and wind for the next few days.", []string{"city", "days"}),
		ToolDoc("calendar", "create_event", "Create a new event in the user's calendar with a title, start and end time.", []string{"title", "start", "end"}),
		ToolDoc("calendar", "add_event", "Create a new event in the user's calendar with a title, start and end time.", []string{"title", "start", "end"}),
		ToolDoc("calendar", "list_events", "List the events in the user's calendar between two dates.", []string{"from", "to"}),
		ToolDoc("files", "read_file", "Read a text file from disk and return its contents.", []string{"path"}),
		ToolDoc("files", "write_file", "Write text to a file on disk, replacing its contents.", []string{"path", "content"}),
		ToolDoc("blobs", "read_text_file", "Read a text file from blob storage and return its contents.", []string{"path"}),
		ToolDoc("mail", "send_email", "Send an email message to one or more recipients.", []string{"to", "subject", "body"}),
		ToolDoc("mail", "search_inbox", "Search the mailbox for messages matching a query.", []string{"query"}),
		ToolDoc("db", "run_query", "Run a read-only SQL query against the analytics database and return the rows.", []string{"sql"}),
		ToolDoc("git", "log", "Show the commit history of a repository between two revisions.", []string{"from", "to"}),
		ToolDoc("git", "diff", "Show the changes between two revisions of a repository.", []string{"from", "to"}),
		ToolDoc("tickets", "create_ticket", "Open a ticket in the issue tracker with a title and description.", []string{"title", "body"}),
		ToolDoc("tickets", "close_ticket", "Close an issue-tracker ticket with a resolution note.", []string{"id", "note"}),
		ToolDoc("maps", "geocode", "Turn a street address into latitude and longitude.", []string{"address"}),
		ToolDoc("maps", "route", "Plan a driving or walking route between two places.", []string{"from", "to", "mode"}),
		ToolDoc("translate", "translate_text", "Translate text into another language.", []string{"text", "target"}),
		ToolDoc("images", "describe_image", "Describe the contents of an image in plain words.", []string{"url"}),
	}
	return docs
}

func BenchmarkResolve(b *testing.B) {
	ctx := context.Background()
	idx := lexIdx(b, benchDocs()...)
	needs := []string{
		"Fetch a web page and return its main content as markdown.",
		"Create a calendar event",
		"Read a text file and return its contents",
		"Translate a paragraph from English into French",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Resolve(ctx, idx, LexicalPolicy(), needs[i%len(needs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIndex(b *testing.B) {
	ctx := context.Background()
	docs := benchDocs()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewLexical().Index(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleResolve() {
	ctx := context.Background()
	idx, _ := NewLexical().Index(ctx, []Doc{
		ToolDoc("promptforge", "web_fetch", "Fetch a web page and return its main content as markdown.", []string{"url"}),
		ToolDoc("promptforge", "web_search", "Search the web and return a list of results (title, url, description).", []string{"query"}),
	})
	d, _ := Resolve(ctx, idx, LexicalPolicy(), "Fetch a web page and return its main content as markdown.")
	fmt.Println(d.Outcome, idx.Doc(d.Members[0]).Name)
	// Output: bind web_fetch
}

// BenchmarkIndexPrompts10k indexes a catalog the size of the catalog
// package's reload benchmark: what the first need_prompt after a
// ranking change pays.
func BenchmarkIndexPrompts10k(b *testing.B) {
	ctx := context.Background()
	docs := make([]Doc, 10_000)
	for i := range docs {
		docs[i] = PromptDoc(fmt.Sprintf("prompt_%05d", i), fmt.Sprintf("Summarize report number %d for a reader in a hurry.", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewLexical().Index(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
}
