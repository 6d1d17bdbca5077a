package names

import (
	"slices"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "a1", "a_b", "z9_", "a" + strings.Repeat("b", MaxLen-1)} {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "A", "1a", "_a", "a-b", "a.b", "aB", "é", "a" + strings.Repeat("b", MaxLen)} {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
	}
}

func TestReserved(t *testing.T) {
	want := []string{"list_prompts", "run_prompt", "check_run", "need_prompt"}
	got := Reserved()
	if !slices.Equal(got, want) {
		t.Fatalf("Reserved() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if Reserved()[0] != ListPrompts {
		t.Fatal("Reserved shares its slice between calls")
	}
	for _, n := range want {
		if !IsReserved(n) || !ValidName(n) {
			t.Errorf("%s: reserved %v, valid %v", n, IsReserved(n), ValidName(n))
		}
	}
	for _, n := range []string{"", "run", "list_prompts2", "Run_prompt"} {
		if IsReserved(n) {
			t.Errorf("IsReserved(%q) = true", n)
		}
	}
}

func TestNameShape(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"a_1", true},
		{"a" + strings.Repeat("b", 47), true},
		{"a" + strings.Repeat("b", 48), false},
		{"", false},
		{"1a", false},
		{"_a", false},
		{"Abc", false},
		{"a-b", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.name); got != tt.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
