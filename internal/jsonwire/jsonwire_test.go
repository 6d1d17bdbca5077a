package jsonwire

import (
	"encoding/json"
	"testing"
)

func TestMarshal(t *testing.T) {
	v := map[string]any{"b": "<a & b>", "a": []int{1, 2}}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,2],"b":"<a & b>"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	// Apart from the escaping, it is json.Marshal.
	std, _ := json.Marshal(map[string]string{"k": "plain"})
	if got, _ := Marshal(map[string]string{"k": "plain"}); string(got) != string(std) {
		t.Errorf("Marshal = %s, json.Marshal = %s", got, std)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("an unsupported type encoded")
	}
}

// appendStringCases are strings whose encoding differs from their bytes:
// every ASCII control character, quotes and backslashes, HTML characters
// (left alone), U+2028 and U+2029, invalid and truncated UTF-8.
func appendStringCases() []string {
	cases := []string{"", "plain", `q"uote`, `back\slash`, "<a & b>", "line\u2028sep\u2029para",
		"bad\xffutf8", "trunc\xe2\x82", "\xed\xa0\x80surrogate", "emoji 🙂 and é", "\x7f del"}
	for b := range 0x80 {
		cases = append(cases, "x"+string(rune(b))+"y")
	}
	for b := 0x80; b < 0x100; b++ {
		cases = append(cases, "x"+string([]byte{byte(b)})+"y")
	}
	return cases
}

func TestAppendStringIsMarshal(t *testing.T) {
	for _, s := range appendStringCases() {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range appendStringCases() {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

func checkAppendString(t *testing.T, s string) {
	want, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString([]byte("prefix:"), s); string(got) != "prefix:"+string(want) {
		t.Errorf("AppendString(%q) = %s, want %s", s, got[len("prefix:"):], want)
	}
}
