package prompt

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestPlainFrontmatterDecodesAsYAML checks the YAML-free path against
// goccy: whatever it accepts, goccy decodes to the same Frontmatter, and
// the shapes it must hand over (anything YAML could read otherwise, or
// that goccy rejects) it does hand over.
func TestPlainFrontmatterDecodesAsYAML(t *testing.T) {
	check := func(t *testing.T, yml string) bool {
		t.Helper()
		plain, ok := plainFrontmatter([]byte(yml))
		if !ok {
			return false
		}
		want, perr := decodeYAMLFrontmatter(fmSplit{yaml: []byte(yml), yamlLine: 2})
		if perr != nil {
			t.Fatalf("plain path accepted what goccy rejects (%s):\n%s", perr.Msg, yml)
		}
		if !reflect.DeepEqual(plain, want) {
			t.Fatalf("plain path decoded\n%s\nas %+v, goccy as %+v", yml, plain, want)
		}
		return true
	}

	for _, yml := range []string{
		"name: greet\ndescription: Say hello.\n",
		"name: greet\ndescription: Say hello.\npromptforge: 1\n",
		"promptforge: 12\ndescription:   Trailing and leading spaces   \nname: prompt_00001\n",
		"name: a-b.c\ndescription: Summarize (briefly), then list; a/b? x+y=z! 50% off & more * 2 @ noon ~ <tag> | pipe ^ $5\n",
	} {
		if !check(t, yml) {
			t.Errorf("plain path declined a plain frontmatter:\n%s", yml)
		}
	}

	// Shapes that must go to goccy: its diagnosis, or a value YAML reads
	// as something other than the spelled string.
	for _, yml := range []string{
		"",
		"name: greet\n", // missing description: goccy's path says so
		"name: greet\ndescription: x\nname: again\n", // duplicate key
		"name: greet\ndescription: x\nextra: 1\n",    // unknown key
		"name: greet\ndescription: x\nmax_tool_iterations: 3\n",
		"name: greet\ndescription: yes\n",                // a YAML 1.1 boolean
		"name: greet\ndescription: Null\n",               // null
		"name: 123\ndescription: x\n",                    // an integer
		"name: greet\ndescription: 'quoted'\n",           // quotes
		"name: greet\ndescription: a: b\n",               // a nested mapping
		"name: greet\ndescription: a #comment\n",         // a comment
		"name: greet\ndescription: first\n  continued\n", // a folded continuation
		"name: greet\ndescription: x\n\n",                // a blank line
		"# comment\nname: greet\ndescription: x\n",
		"name: greet\ndescription: x\npromptforge: 01\n", // YAML 1.1 octal
		"name: greet\ndescription: x\npromptforge: -1\n",
		"name: greet\ndescription: x\npromptforge: 1.0\n",
		"name: greet\ndescription: x\npromptforge: 99999999999999999999\n",
		"name: greet\ndescription: tab\there\n",
		"name: greet\ndescription: [a, b]\n",
		"name: greet\ndescription: &anchor x\n",
		"name: greet\ndescription: x", // no final newline: never what splitFrontmatter gives
		"name:greet\ndescription: x\n",
		"name: gr\u00e9et\ndescription: x\n",
	} {
		if check(t, yml) {
			t.Errorf("plain path took a frontmatter goccy must decide:\n%q", yml)
		}
	}

	// Random values from the plain alphabet and a little beyond it: the
	// plain path may decline any of them, never decode one differently.
	alphabet := []byte("abcXYZ019 _-.,;()/?!+=*&%$@^~<>|:#'\"\\\t[]{}`")
	words := []string{"yes", "No", "ON", "off", "True", "false", "null", "Null", "NULL", "y", "N", "nan", "NaN", "inf", "Infinity", ".inf", "~", "0x1F", "1e3", "0o17", "2001-12-14"}
	r := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for range 20000 {
		var v strings.Builder
		if r.IntN(8) == 0 {
			v.WriteString(words[r.IntN(len(words))])
		} else {
			v.WriteByte("aZq"[r.IntN(3)])
		}
		for range r.IntN(12) {
			if r.IntN(4) == 0 {
				v.WriteByte(alphabet[r.IntN(len(alphabet))])
			} else {
				v.WriteByte(alphabet[r.IntN(9)+r.IntN(2)*9])
			}
		}
		if r.IntN(5) == 0 {
			v.WriteString(words[r.IntN(len(words))])
		}
		lines := []string{"name: p_" + strings.Repeat("x", r.IntN(3)), "description: " + v.String()}
		if r.IntN(2) == 0 {
			lines = append(lines, "promptforge: "+[]string{"1", "2", "10", "0", "007", "1_0", "+1"}[r.IntN(7)])
		}
		r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		if check(t, strings.Join(lines, "\n")+"\n") {
			accepted++
		}
	}
	if accepted < 5000 {
		t.Fatalf("the plain path took only %d of 20,000 generated frontmatters", accepted)
	}
}
