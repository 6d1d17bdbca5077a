package config

import (
	"strings"
	"testing"
)

func TestObservability_ValuesAndRefusals(t *testing.T) {
	cfg := mustParse(t, minimal+"\n[observability]\ntraces = false\ncapture_content = true\ntrace_steps = 50\notlp_endpoint = \"http://127.0.0.1:4318/v1/traces\"\n", nil)
	want := Observability{Traces: false, CaptureContent: true, TraceSteps: 50, OTLPEndpoint: "http://127.0.0.1:4318/v1/traces"}
	if cfg.Observability != want {
		t.Fatalf("observability = %+v, want %+v", cfg.Observability, want)
	}
	for _, tc := range []struct{ body, want string }{
		{"trace_steps = 0", "[observability].trace_steps must be between 1 and 1000000"},
		{"otlp_endpoint = \"127.0.0.1:4318\"", "[observability].otlp_endpoint must be an http or https URL"},
		{"traces = \"yes\"", "true or false"},
		{"sample = 1", "sample"},
	} {
		_, err := Parse([]byte(minimal+"\n[observability]\n"+tc.body+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.body, err, tc.want)
		}
	}
}

func TestObservability_ChangeNeedsARestart(t *testing.T) {
	a := mustParse(t, minimal, nil)
	b := mustParse(t, minimal+"\n[observability]\ncapture_content = true\n", nil)
	if got := a.DiffUnreloadable(b); len(got) != 1 || got[0] != "[observability]" {
		t.Fatalf("DiffUnreloadable = %v", got)
	}
}
