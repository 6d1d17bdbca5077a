package prompt

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// One CommonMark parser (commonMark) serves every Parse: prompts parsed
// on many goroutines at once (as the catalog's resolution does) come out
// as each does alone, and -race sees no shared state written.
func TestParseConcurrentlyMatchesParseAlone(t *testing.T) {
	bodies := []string{
		"# Title\n\nPlain prose.\n",
		"# T\n\n## First\n\nSome *text*.\n\n## Second\n\n- one\n- two\n",
		"# T\n\n```lua\nreturn 1\n```\n\nAfter the block.\n",
		"# T\n\n> quoted\n\n1. a\n2. b\n\n---\n\n## Off\n\nText.\n",
		"# T\n\n## A\n\n### B\n\n```\nplain fence\n```\n\n#### C\n\nlast\n",
	}
	want := make([]*Prompt, len(bodies))
	for i, b := range bodies {
		want[i] = mustParse(t, b)
		if again := mustParse(t, b); !reflect.DeepEqual(again, want[i]) {
			t.Fatalf("body %d parses differently twice in a row", i)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(bodies))
	for g := range 8 {
		wg.Go(func() {
			for r := range 20 {
				i := (g + r) % len(bodies)
				p, err := Parse([]byte(header + bodies[i]))
				if err != nil || !reflect.DeepEqual(p, want[i]) {
					errs <- fmt.Sprintf("goroutine %d: body %d parsed differently (%v)", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
