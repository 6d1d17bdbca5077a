package apiurl

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		raw  string
		want Problem // 0: accepted
	}{
		{"http://127.0.0.1:8081/v1", 0},
		{"https://gw.example:8443/v1/", 0},
		{"HTTP://h/v1", 0},
		{"http://[::1]:8081/v1", 0},
		{"", Empty},
		{"  ", Empty},
		{"127.0.0.1:8081/v1", Unparseable},
		{" http://gw/v1", Unparseable},
		{"/v1", NoScheme},
		{"ftp://gw/v1", BadScheme},
		{"http:///v1", NoHost},
		{"http://:8081/v1", NoHost},
		{"http:gw", NoHost},
		{"http://user:pw@gw/v1", Userinfo},
		{"ftp://user:pw@gw/v1", Userinfo}, // credentials are reported first
		{"http://gw/v1?key=x", Query},
		{"http://gw/v1?", Query},
		{"http://gw/v1#top", Fragment},
		{"http://gw/v1#", Fragment},
	}
	for _, tt := range tests {
		_, err := Check(tt.raw)
		switch {
		case tt.want == 0 && err != nil:
			t.Errorf("Check(%q) = %v", tt.raw, err)
		case tt.want != 0 && (err == nil || err.Problem != tt.want):
			t.Errorf("Check(%q) = %v, want %v", tt.raw, err, tt.want)
		}
	}
}

func TestCheckShapeAllowsWhatOnlyTheRootRuleRefuses(t *testing.T) {
	for _, raw := range []string{"http://user:pw@gw/v1", "http://gw/v1?q", "http://gw/v1#f"} {
		if _, err := CheckShape(raw); err != nil {
			t.Errorf("CheckShape(%q) = %v", raw, err)
		}
	}
	for raw, want := range map[string]Problem{"": Empty, "/v1": NoScheme, "ftp://user:pw@gw": BadScheme, "http:///v1": NoHost, "%zz": Unparseable} {
		if _, err := CheckShape(raw); err == nil || err.Problem != want {
			t.Errorf("CheckShape(%q) = %v, want %v", raw, err, want)
		}
	}
}

func TestErrorNeverRepeatsTheURL(t *testing.T) {
	for _, raw := range []string{"http://user:hunter2@gw/v1", "ftp://hunter2/v1", "http://gw/v1?hunter2", "%zzhunter2"} {
		if _, err := Check(raw); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Check(%q) = %v", raw, err)
		}
	}
}
