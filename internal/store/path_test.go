package store

import (
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	valid := []string{
		"a", "notes/report.md", "deep/er/path/file.txt", "icon/ok", "console.md", "com0.txt",
		"com10", "lpt", "a b/c d", ".hidden", "a/.b", "x..y", "ü/ñ.md", strings.Repeat("a", 1024),
		"COM", "nul_file", "a/...b",
	}
	for _, p := range valid {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	invalid := []struct{ path, reason string }{
		{"", "the path is empty"},
		{strings.Repeat("a", 1025), "the path is longer than 1024 bytes"},
		{"/etc/passwd", "the path must be relative, not start with /"},
		{"a\x00b", "the path contains a control character"},
		{"a\nb", "the path contains a control character"},
		{"a\x7fb", "the path contains a control character"},
		{`a\b`, "the path contains a backslash; separate segments with /"},
		{"a//b", "the path has an empty segment (a doubled or trailing /)"},
		{"a/", "the path has an empty segment (a doubled or trailing /)"},
		{".", "the path has a . or .. segment"},
		{"a/../b", "the path has a . or .. segment"},
		{"./a", "the path has a . or .. segment"},
		{"a/b.", `segment "b." ends in a dot`},
		{"a./b", `segment "a." ends in a dot`},
		{"a/b ", `segment "b " ends in a space`},
		{"CON", `segment "CON" is a reserved Windows device name`},
		{"dir/nul.txt", `segment "nul.txt" is a reserved Windows device name`},
		{"Aux.tar.gz", `segment "Aux.tar.gz" is a reserved Windows device name`},
		{"prn/x", `segment "prn" is a reserved Windows device name`},
		{"com1", `segment "com1" is a reserved Windows device name`},
		{"x/CoM9.log", `segment "CoM9.log" is a reserved Windows device name`},
		{"LPT5", `segment "LPT5" is a reserved Windows device name`},
		{"lpt9.md", `segment "lpt9.md" is a reserved Windows device name`},
	}
	for _, tt := range invalid {
		wantErr(t, ValidatePath(tt.path), KindInvalidPath, "invalid path "+sprintfQ(tt.path)+": "+tt.reason)
	}
}
