package config

import (
	"maps"
	"testing"
)

func TestParseEnv(t *testing.T) {
	process := vars(map[string]string{"FROM_PROCESS": "p", "SHARED": "process-wins"})
	cases := []struct {
		name, text string
		want       map[string]string
	}{
		{"plain", "KEY=value\n", map[string]string{"KEY": "value"}},
		{"no trailing newline", "KEY=value", map[string]string{"KEY": "value"}},
		{"CRLF", "A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}},
		{"spaces around =", "  KEY =  value  \n", map[string]string{"KEY": "value"}},
		{"export prefix", "export KEY=v\n", map[string]string{"KEY": "v"}},
		{"export as a key", "export=1\n", map[string]string{"export": "1"}},
		{"dotted key", "a.b_C=1\n", map[string]string{"a.b_C": "1"}},
		{"empty value", "KEY=\nOTHER= # note\n", map[string]string{"KEY": "", "OTHER": ""}},
		{"comments and blank lines", "# heading\n\n   # indented, it's fine\nKEY=v # trailing\nHASH=v#kept\n",
			map[string]string{"KEY": "v", "HASH": "v#kept"}},
		{"single quotes are literal", `KEY='a $FROM_PROCESS \n "q"'` + "\n", map[string]string{"KEY": `a $FROM_PROCESS \n "q"`}},
		{"double quotes with escapes", `KEY="a\nb \"c\" \\d \$e \'f\' g\ h"` + "\n",
			map[string]string{"KEY": "a\nb \"c\" \\d $e 'f' g h"}},
		{"unquoted escapes", `KEY=a\ b\$c` + "\n", map[string]string{"KEY": "a b$c"}},
		{"quoted value spans lines", "KEY=\"line one\nline two\"\nNEXT=1\n", map[string]string{"KEY": "line one\nline two", "NEXT": "1"}},
		{"single-quoted value spans lines", "KEY='a\nb'\n", map[string]string{"KEY": "a\nb"}},
		{"substitution from earlier lines", "A=1\nB=$A-${A}-\"$A\"\n", map[string]string{"A": "1", "B": "1-1-1"}},
		{"substitution from the process first", "SHARED=file\nX=${SHARED}/$FROM_PROCESS\n",
			map[string]string{"SHARED": "file", "X": "process-wins/p"}},
		{"unset substitutes empty", "X=[${NOPE}][$NOPE]\n", map[string]string{"X": "[][]"}},
		{"underscored names", "MY_VAR=v\nX=$MY_VAR\n", map[string]string{"MY_VAR": "v", "X": "v"}},
		{"a lone dollar is literal", "X=100$\nY=$-x\n", map[string]string{"X": "100$", "Y": "$-x"}},
		{"later lines win", "K=1\nK=2\n", map[string]string{"K": "2"}},
		{"quoted whitespace kept", `K="  padded  "` + "\n", map[string]string{"K": "  padded  "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, line, ok := parseEnv(tc.text, process)
			if !ok {
				t.Fatalf("parseEnv failed at line %d", line)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("parseEnv = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseEnvRejects(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
	}{
		{"no equals sign", "A=1\nnot a pair\n", 2},
		{"key starts with a digit", "1A=1\n", 1},
		{"unquoted space in value", "A=b c\n", 1},
		{"unknown escape", `A="\q"` + "\n", 1},
		{"unclosed double quote", "A=1\nB=\"open\nstill open\n", 2},
		{"unclosed single quote", "A='x\n", 1},
		{"unclosed brace", "A=${B\n", 1},
		{"after a multi-line value", "A=\"x\ny\"\nB=1\nC\n", 4},
		{"text after closing quote", `A="x" y` + "\n", 1},
		{"export without a key", "export\n", 1},
		{"export of a bad key", "export 1A=2\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, line, ok := parseEnv(tc.text, vars(nil))
			if ok {
				t.Fatalf("parseEnv = %q, want a failure", got)
			}
			if line != tc.line {
				t.Errorf("line = %d, want %d", line, tc.line)
			}
		})
	}
}
