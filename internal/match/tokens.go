package match

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// appendTerms splits s into index terms and appends them to out: words
// are runs of letters and digits, further split at snake_case and
// camelCase boundaries, lower-cased, stripped of stop words and one-letter
// words, and lightly stemmed so "events" meets "event" and "translation"
// meets "translate".
func appendTerms(out []string, s string) []string {
	var t tokenizer
	t.each(s, func(term []byte) { out = append(out, string(term)) })
	return out
}

// tokenizer turns text into terms (see appendTerms) without allocating
// per word: each term is built in a reused buffer and handed to a
// callback, so indexing allocates only for terms new to its vocabulary.
type tokenizer struct {
	word []byte // the current word, lower-cased, UTF-8
}

// each calls fn with every term of s, in order. term is only valid during
// the call.
func (t *tokenizer) each(s string, fn func(term []byte)) {
	runes := 0 // in t.word: one-letter words are dropped by rune count
	flush := func() {
		if runes > 1 && !isStopWord(string(t.word)) {
			fn(stem(t.word))
		}
		t.word, runes = t.word[:0], 0
	}
	prev := rune(0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			prev = 0
			continue
		}
		if unicode.IsUpper(r) && runes > 0 {
			next, _ := utf8.DecodeRuneInString(s[i:])
			// "getForecast" splits before F; "HTTPServer" splits before
			// the S that starts a lower-case run.
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				(unicode.IsUpper(prev) && unicode.IsLower(next)) {
				flush()
			}
		}
		if r < utf8.RuneSelf {
			c := byte(r)
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			t.word = append(t.word, c)
		} else {
			t.word = utf8.AppendRune(t.word, unicode.ToLower(r))
		}
		runes++
		prev = r
	}
	flush()
}

// isStopWord reports function words and request phrasing ("I need a
// tool that…") that carry no capability. The list is small on purpose:
// every word dropped here is one a need can no longer match on.
func isStopWord(w string) bool {
	switch w {
	case
		"about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
		"been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does",
		"doing", "done", "each", "either", "else", "etc", "for", "from", "had", "has", "have",
		"he", "her", "here", "hers", "him", "his", "how", "if", "in", "into", "is", "it", "its",
		"itself", "just", "let", "me", "might", "more", "most", "must", "my", "need", "needed",
		"needs", "no", "nor", "not", "of", "off", "on", "once", "one", "only", "onto", "or",
		"other", "our", "ours", "out", "over", "own", "please", "same", "shall", "she",
		"should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
		"then", "there", "these", "they", "this", "those", "through", "thus", "to", "too",
		"under", "until", "up", "upon", "us", "very", "want", "wanted", "wants", "was", "we",
		"were", "what", "when", "where", "whether", "which", "while", "who", "whom", "whose",
		"why", "will", "with", "within", "without", "would", "yet", "you", "your", "yours":
		return true
	}
	return false
}

// stem removes common English inflection, in place. It is deliberately
// crude (a few suffix rules, no dictionary): both sides of every
// comparison go through it, so it only has to map related forms to one
// key, not produce words. Every rule shortens the word or keeps its
// length, so it never needs more room than w has.
func stem(w []byte) []byte {
	if len(w) <= 3 || !isASCII(w) {
		return w
	}
	americanize(w)
	switch {
	case hasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case hasSuffix(w, "ies") && len(w) > 4:
		w = append(w[:len(w)-3], 'y')
	case hasSuffix(w, "s") && !hasSuffix(w, "ss") &&
		!hasSuffix(w, "us") && !hasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	// -ing and -ed come off only when a vowel stays in front ("string"
	// and "red" keep theirs) and not from -eed ("speed", "agreed").
	switch {
	case hasSuffix(w, "ing") && len(w) >= 6 && hasVowel(w[:len(w)-3]):
		w = undouble(w[:len(w)-3])
	case hasSuffix(w, "ed") && !hasSuffix(w, "eed") && len(w) >= 5 && hasVowel(w[:len(w)-2]):
		w = undouble(w[:len(w)-2])
	case (hasSuffix(w, "tion") || hasSuffix(w, "sion")) && len(w) >= 7:
		w = w[:len(w)-3]
	}
	// Noun and adjective endings: "assistance" and "assistant" meet
	// "assist". A stem must keep four letters so "agent" stays whole.
	for _, suf := range [...]string{"ment", "ance", "ence", "ant", "ent"} {
		if hasSuffix(w, suf) && len(w)-len(suf) >= 4 {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if len(w) > 3 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	return w
}

func hasSuffix(w []byte, suf string) bool {
	return len(w) >= len(suf) && string(w[len(w)-len(suf):]) == suf
}

// undouble turns "runn" (from "running") back into "run"; l, s and z are
// left alone because "call", "pass" and "buzz" end doubled in their base
// form, and three-letter results ("add" from "added") are kept whole.
func undouble(w []byte) []byte {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCII(w []byte) bool {
	for _, c := range w {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// americanize spells -ise words the -ize way, in place, so "summarise"
// meets "summarize". Words that only ever take -ise ("promise") change
// too, but identically on both sides of a comparison, so nothing is lost.
func americanize(w []byte) {
	for _, suf := range [...]string{"isations", "isation", "ising", "ised", "ises", "ise"} {
		if hasSuffix(w, suf) && len(w) > len(suf)+2 {
			w[len(w)-len(suf)+1] = 'z'
			return
		}
	}
}

func hasVowel(w []byte) bool { return bytes.ContainsAny(w, "aeiouy") }
