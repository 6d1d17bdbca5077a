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
