package transport

import (
	"reflect"
	"testing"
)

// The lane's _meta memo answers as newEraMeta does, for the bytes it
// remembers, for others after them, and for bytes newEraMeta refuses;
// each call gets a map of its own; and the bytes it remembers cost fewer
// allocations than newEraMeta's checks (issue #12).
func TestMetaMemoIsNewEraMeta(t *testing.T) {
	const (
		meta  = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"client","version":"v1.8.0"}}`
		other = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		// A clientInfo whose name is a number: the SDK cannot decode it.
		refused = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":1}}`
	)
	var m metaMemo
	var first map[string]any
	for i, raw := range []string{meta, meta, other, refused, meta, refused, meta} {
		got, ok := m.newEraMeta([]byte(raw))
		want, wantOK := newEraMeta([]byte(raw))
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d (%s): the memo answered %v %v; newEraMeta %v %v", i, raw, got, ok, want, wantOK)
		}
		if wantOK != (raw != refused) {
			t.Fatalf("call %d (%s): newEraMeta took it: %v", i, raw, wantOK)
		}
		if raw == meta {
			if first == nil {
				first = got
			} else if reflect.ValueOf(got).Pointer() == reflect.ValueOf(first).Pointer() {
				t.Fatalf("call %d: the memo answered the map of an earlier call", i)
			}
		}
	}
	if raceEnabled {
		return // the allocation counts are the race detector's (raceEnabled)
	}
	memo := testing.AllocsPerRun(20, func() { m.newEraMeta([]byte(meta)) })
	checked := testing.AllocsPerRun(20, func() { newEraMeta([]byte(meta)) })
	if memo >= checked {
		t.Errorf("the remembered _meta cost %v allocations, newEraMeta's checks %v; want fewer", memo, checked)
	}
}

// A _meta with a progress token, which a client makes anew for each call,
// is not remembered: the memo would never match it, and copying it cost
// two allocations per call more than newEraMeta alone.
func TestMetaMemoDoesNotRememberProgressTokens(t *testing.T) {
	const head = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":`
	calls := [][]byte{[]byte(head + `1}`), []byte(head + `2}`)}
	for _, raw := range calls {
		got, ok := (&metaMemo{}).newEraMeta(raw)
		want, wantOK := newEraMeta(raw)
		if !ok || !wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the memo answered %v %v; newEraMeta %v %v", raw, got, ok, want, wantOK)
		}
	}
	if raceEnabled {
		return // the allocation counts are the race detector's (raceEnabled)
	}
	var m metaMemo
	i := 0
	memo := testing.AllocsPerRun(20, func() { i++; m.newEraMeta(calls[i%2]) })
	checked := testing.AllocsPerRun(20, func() { i++; newEraMeta(calls[i%2]) })
	if memo > checked {
		t.Errorf("a _meta with a new progress token each call cost %v allocations through the memo, %v through newEraMeta; want no more", memo, checked)
	}
}
