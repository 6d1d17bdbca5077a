package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// FuzzPlainCallParams holds the fast lane's decoding of tools/call params
// to the SDK's: whatever plainCallParams or newEraCallParams accepts, the decoder go-sdk
// v1.8.0 uses for params (internal/json: segmentio's, member names
// matched exactly) must decode to the same name, arguments and _meta.
func FuzzPlainCallParams(f *testing.F) {
	for _, seed := range []string{
		`{"name":"run_prompt","arguments":{"prompt":"echo","args":"hi"}}`,
		`{ "name" : "x" , "arguments" : { "a" : [1, 2.5, null, true, "\u00e9"] } }`,
		`{"name":"list_prompts"}`,
		`{"name":"t","_meta":{"progressToken":"p"}}`,
		`{"name":"t","_meta":{"progressToken":-9007199254740992},"arguments":{}}`,
		`{"name":"t","_meta":{}}`,
		`{"Name":"t"}`,
		`{"name":"t","name":"u"}`,
		`{"n\u0061me":"t"}`,
		`{"name":"t","arguments":null}`,
		`{"name":"t","_meta":{"progressToken":1.5}}`,
		`{"name":"t","extra":1}`,
		`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"name":"t","arguments":{},"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`,
		`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}}}`,
		`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		got, ok := plainCallParams(raw)
		newEra := false
		if !ok {
			if got, ok = newEraCallParams(raw); !ok {
				return
			}
			newEra = true
		}
		var want *mcp.CallToolParamsRaw
		dec := segjson.NewDecoder(bytes.NewReader(raw))
		dec.DontMatchCaseInsensitiveStructFields()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("the lane accepted %s, which the SDK's decoder refuses: %v", raw, err)
		}
		if got.Name != want.Name || !bytes.Equal(got.Arguments, want.Arguments) || !reflect.DeepEqual(got.Meta, want.Meta) ||
			want.InputResponses != nil || want.RequestState != "" {
			t.Fatalf("params %s: the lane made %+v, the SDK %+v", raw, got, want)
		}
		if newEra {
			// What validateRequestMeta reads: the lane takes exactly
			// 2026-07-28, no log level, and capabilities (and client
			// info, when present) that decode.
			m := want.Meta
			_, level := m[mcp.MetaKeyLogLevel]
			if m[mcp.MetaKeyProtocolVersion] != "2026-07-28" || level || m[mcp.MetaKeyClientCapabilities] == nil {
				t.Fatalf("params %s: the lane took a _meta the SDK judges otherwise: %v", raw, m)
			}
			for k, v := range m {
				if k != mcp.MetaKeyProtocolVersion && k != mcp.MetaKeyClientCapabilities && k != mcp.MetaKeyClientInfo && k != "progressToken" {
					t.Fatalf("params %s: the lane took an unknown _meta member %q", raw, k)
				}
				if k == mcp.MetaKeyClientInfo || k == mcp.MetaKeyClientCapabilities {
					if _, isMap := v.(map[string]any); !isMap {
						t.Fatalf("params %s: %s is %T", raw, k, v)
					}
				}
			}
		} else if _, ok := want.Meta[mcp.MetaKeyProtocolVersion]; ok {
			t.Fatalf("params %s: the 2025-era shape took a per-request version", raw)
		}
	})
}

// TestCallParamsTakeThePlainShapes is FuzzPlainCallParams' other half:
// the fuzz target checks only what the lane accepts, so a decoder that
// refused everything would pass it. The shapes the lane exists for are
// taken, each by the decoder of its era, and the near misses are not.
func TestCallParamsTakeThePlainShapes(t *testing.T) {
	const era = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	for _, c := range []struct {
		raw           string
		plain, newEra bool
	}{
		{raw: `{"name":"run_prompt","arguments":{"prompt":"echo","args":"hi"}}`, plain: true},
		{raw: `{ "name" : "x" , "arguments" : { "a" : [1, 2.5, null, true, "\u00e9"] } }`, plain: true},
		{raw: `{"name":"list_prompts"}`, plain: true},
		{raw: `{"name":"t","_meta":{"progressToken":"p"}}`, plain: true},
		{raw: `{"name":"t","_meta":{"progressToken":-9007199254740992},"arguments":{}}`, plain: true},
		{raw: `{"name":"t","_meta":{}}`, plain: true},
		{raw: `{"Name":"t"}`},
		{raw: `{"name":"t","name":"u"}`},
		{raw: `{"n\u0061me":"t"}`},
		{raw: `{"name":"t","arguments":null}`},
		{raw: `{"name":"t","_meta":{"progressToken":1.5}}`},
		{raw: `{"name":"t","extra":1}`},
		{raw: `{"arguments":{}}`},
		{raw: `{"name":"t","_meta":{` + era + `,"io.modelcontextprotocol/clientCapabilities":{}}}`, newEra: true},
		{raw: `{"name":"t","arguments":{},"_meta":{"progressToken":3,` + era + `,"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`, newEra: true},
		{raw: `{"name":"t","_meta":{` + era + `,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}`},
	} {
		if _, ok := plainCallParams([]byte(c.raw)); ok != c.plain {
			t.Errorf("plainCallParams(%s) took it: %v, want %v", c.raw, ok, c.plain)
		}
		if _, ok := newEraCallParams([]byte(c.raw)); ok != c.newEra {
			t.Errorf("newEraCallParams(%s) took it: %v, want %v", c.raw, ok, c.newEra)
		}
	}
}
