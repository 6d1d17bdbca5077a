package prompt

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestRenderValue(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"string verbatim", `say "hi" <b>`, `say "hi" <b>`},
		{"integral float", float64(42), "42"},
		{"negative integral", float64(-7), "-7"},
		{"zero", float64(0), "0"},
		{"fraction", 1.5, "1.5"},
		{"large", 1e21, "1e+21"},
		{"large integral", 1e20, "100000000000000000000"},
		{"small", 1e-7, "1e-7"},
		{"int64", int64(-9007199254740993), "-9007199254740993"},
		{"int", 5, "5"},
		{"uint64", uint64(math.MaxUint64), "18446744073709551615"},
		{"json number", json.Number("12.50"), "12.50"},
		{"true", true, "true"},
		{"false", false, "false"},
		{"null", nil, "null"},
		{"empty array", []any{}, "[]"},
		{"empty object", map[string]any{}, "{}"},
		{"sorted keys", map[string]any{"b": 1.0, "a": map[string]any{"d": "x", "c": []any{nil}}}, `{"a":{"c":[null],"d":"x"},"b":1}`},
		{"json escapes", []any{"q\"b\\n\n\t\r\b\f\x01\x7f<>&\u2028é"}, `["q\"b\\n\n\t\r\b\f\u0001` + "\x7f<>&\u2028é" + `"]`},
		{"invalid utf8", []any{"a\xffb"}, `["a` + "\ufffd" + `b"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderValue(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRenderValueMatchesJSONForJSONData(t *testing.T) {
	// Whatever we render inside arrays/objects must be valid JSON that
	// decodes back to the same value.
	in := map[string]any{"s": "x<y>&\"\\\n", "n": 3.25, "l": []any{1.0, "a", false, nil}, "o": map[string]any{"k": "v"}}
	out, err := RenderValue(in)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("%s is not JSON: %v", out, err)
	}
	again, _ := RenderValue(back)
	if again != out {
		t.Errorf("round trip changed %s into %s", out, again)
	}
}

func TestRenderValueRejectsNonJSON(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), []any{math.Inf(-1)}, map[string]any{"f": func() {}}, struct{}{}, json.Number("1x")} {
		if got, err := RenderValue(v); err == nil {
			t.Errorf("RenderValue(%T) = %q, want an error", v, got)
		}
	}
}

func TestRenderPathSerializeError(t *testing.T) {
	_, err := RenderPath(Path{Head: "var", Keys: []string{"f"}, Raw: "var.f"}, map[string]any{"f": math.NaN()})
	te, ok := err.(*TemplateError)
	if !ok || te.Kind != TplSerialize || !strings.Contains(te.Msg, "{{ var.f }}") || te.Err == nil {
		t.Errorf("got %#v", err)
	}
}
