package transport

import (
	"encoding/json"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The 2026-07-28 (SEP-2575) side of the stdio fast lane: a tools/call that
// carries its protocol version, client capabilities and client info in its
// _meta instead of relying on an initialize. What go-sdk v1.8.0's
// ServerSession.handle does for such a call, besides what the lane does for
// every call, and how the lane does the same:
//
//   - validateRequestMeta: the version must be a string, 2026-07-28 or
//     later, and one the server supports; clientCapabilities present and
//     decodable, clientInfo decodable when present (else -32602). The lane
//     takes only the version 2026-07-28 itself, and only once the SDK has
//     answered a call of that version with a result on this connection
//     (fastLane.probe, fastLane.answered), which proves the server
//     supports it (mcp.Server does not export its versions); it decodes
//     the two members exactly as decodeMetaValue does (newEraMeta) and
//     leaves any call whose members do not decode to the SDK, which
//     refuses it.
//   - the initialization gate: skipped for such a call, and the session's
//     InitializeParams set from the first one. The lane opens after the
//     SDK has answered one, so they are set, and it changes no state.
//   - the log level of _meta goes into the handler's context under an
//     unexported key (logLevelContextKey), which the lane cannot set: a
//     call with a logLevel is the SDK's. Without one the SDK puts "" there,
//     which ServerSession.Log and LoggingHandler read as "send nothing",
//     as they read the session's level when the key is absent, provided
//     that level is "" too: so the lane closes to 2026-07-28 calls for
//     good once a logging/setLevel has been read (fastLane.leveled).
//   - the result: setCompleteResultType, a no-op for *mcp.CallToolResult
//     (it has no resultType), and annotateServerInfo, which the lane does
//     with Backend.Impl (AnnotateServerInfo).

// Member names of a 2026-07-28 request's _meta (go-sdk mcp.MetaKey*).
const (
	metaClientInfo         = mcp.MetaKeyClientInfo
	metaClientCapabilities = mcp.MetaKeyClientCapabilities
	// newEraVersion is the protocol version, as a plain JSON string, that
	// both lanes answering 2026-07-28 calls themselves take: the stdio
	// fast lane's and statelessCalls on HTTP.
	newEraVersion = `"` + protocolStateless + `"`
	// maxMetaDepth bounds the nesting of a _meta member the lane decodes
	// itself, far below the SDK decoder's limit (internal/json, 1000).
	maxMetaDepth = 32
)

// newEraCallParams is plainCallParams for a 2026-07-28 call: the same plain
// shape, with a _meta (required) that newEraMeta accepts.
func newEraCallParams(raw []byte) (*mcp.CallToolParamsRaw, bool) {
	return newEraCallParamsOf(raw, newEraMeta)
}

// newEraCallParamsOf is newEraCallParams with its _meta read by meta
// (newEraMeta, or a metaMemo's): a call without a _meta is not of the era.
func newEraCallParamsOf(raw []byte, meta func([]byte) (mcp.Meta, bool)) (*mcp.CallToolParamsRaw, bool) {
	p, ok := callParams(raw, meta)
	return p, ok && p.Meta != nil
}

// metaMemo is newEraCallParams for one session's lane, remembering the
// last _meta newEraMeta accepted, byte for byte: a client sends the same
// _meta (its version, capabilities and client info) with every call, and
// newEraMeta's checks of it (re-encoding the decoded capabilities and
// client info and decoding them again as the SDK would) were most of what
// a 2026-07-28 call allocated in the lane (issue #12). newEraMeta is a
// function of the bytes alone, so the same bytes pass again; each call
// still gets a map of its own.
type metaMemo struct {
	last atomic.Pointer[string]
}

// newEraCallParams is the package's newEraCallParams through the memo.
func (m *metaMemo) newEraCallParams(raw []byte) (*mcp.CallToolParamsRaw, bool) {
	return newEraCallParamsOf(raw, m.newEraMeta)
}

// newEraMeta is the package's newEraMeta, its checks skipped for the
// bytes it last accepted.
func (m *metaMemo) newEraMeta(raw []byte) (mcp.Meta, bool) {
	if last := m.last.Load(); last != nil && *last == string(raw) {
		meta := mcp.Meta{}
		if sdkUnmarshal(raw, &meta) == nil {
			return meta, true
		}
	}
	meta, ok := newEraMeta(raw)
	if _, token := meta["progressToken"]; ok && !token {
		// Not one with a progress token: a client gives each call its
		// own, so the copy would never be matched and would only cost
		// two allocations more per call than newEraMeta.
		s := string(raw)
		m.last.Store(&s)
	}
	return meta, ok
}

// newEraMeta decodes a 2026-07-28 call's _meta into what the SDK's params
// decoder makes of it, or reports false for anything validateRequestMeta
// would refuse or judge otherwise than the lane can: members with exact,
// unescaped, unique names, of the protocol version 2026-07-28 (required),
// clientCapabilities (required) and clientInfo (optional), each an object
// that decodes as the SDK decodes it, and at most a progressToken as
// plainMeta takes it. A logLevel, and any other member, is the SDK's.
func newEraMeta(raw []byte) (mcp.Meta, bool) {
	_, info, _, ok := newEraMembers(raw)
	if !ok {
		return nil, false
	}
	m := mcp.Meta{}
	if sdkUnmarshal(raw, &m) != nil {
		return nil, false
	}
	if info != nil && !remarshals[mcp.Implementation](m[metaClientInfo]) {
		return nil, false
	}
	if !remarshals[clientCapabilitiesV2](m[metaClientCapabilities]) {
		return nil, false
	}
	return m, true
}

// newEraMembers is the member check newEraMeta and the stateless path's
// standIn share: raw's members, with exact, unescaped, unique names, are
// the protocol version 2026-07-28 (required), clientCapabilities (an
// object, required), clientInfo (an object, optional; nil when absent)
// and a progressToken plainToken takes (its value in token, nil when
// absent),
// and nothing else; false otherwise. Nothing is decoded but the token.
func newEraMembers(raw []byte) (caps, info []byte, token any, ok bool) {
	it, ok := membersOf(raw)
	if !ok {
		return nil, nil, nil, false
	}
	var version, tok []byte
	for {
		key, val, escaped, depth, more := it.next()
		if !more {
			break
		}
		if escaped || depth > maxMetaDepth {
			return nil, nil, nil, false
		}
		var seen *[]byte
		switch string(key) {
		case metaProtocolVersion:
			seen = &version
		case metaClientCapabilities:
			seen = &caps
		case metaClientInfo:
			seen = &info
		case "progressToken":
			seen = &tok
		default:
			return nil, nil, nil, false
		}
		if *seen != nil {
			return nil, nil, nil, false
		}
		*seen = val
	}
	if string(version) != newEraVersion || len(caps) == 0 || caps[0] != '{' || (info != nil && info[0] != '{') {
		return nil, nil, nil, false
	}
	if tok != nil {
		if token, ok = plainToken(tok); !ok {
			return nil, nil, nil, false
		}
	}
	return caps, info, token, true
}

// clientCapabilitiesV2 is the shape go-sdk v1.8.0 decodes a 2026-07-28
// request's clientCapabilities into (mcp/protocol.go, unexported there):
// the same fields, so the same decoder judges them the same.
type clientCapabilitiesV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// remarshals reports whether v, a value of a decoded _meta, decodes into a
// *T as the SDK's decodeMetaValue does it (its remarshal: encoding/json
// out, the SDK's decoder in).
func remarshals[T any](v any) bool {
	if v == nil {
		return false
	}
	data, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var t *T
	return sdkUnmarshal(data, &t) == nil
}

// sdkUnmarshal decodes one JSON value as go-sdk v1.8.0's
// internal/json.Unmarshal does, for input whose nesting is within its
// limit: segmentio's decoder, member names matched exactly. That
// Decoder's Decode is Parse of the value read with the decoder's flags;
// Parse itself is called here because a Decoder allocates a 32 KiB
// buffer, three a call (96 % of the bytes a 2026-07-28 call through the
// lane allocated, BenchmarkStdioToolsCall).
func sdkUnmarshal(data []byte, v any) error {
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// newEraProbe reports whether a call the SDK is about to handle names the
// version 2026-07-28 in its _meta unambiguously (plain, unique members at
// both levels), so that a result the SDK answers it with proves the
// server supports that version.
func newEraProbe(params []byte) bool {
	p, ok := plainMembers(params)
	if !ok {
		return false
	}
	meta, ok := plainMembers(p["_meta"])
	return ok && string(meta[metaProtocolVersion]) == newEraVersion
}

// AnnotateServerInfo does to a 2026-07-28 result what ServerSession.handle
// does after the handler (annotateServerInfo; see the top of this file):
// the server's Implementation in its _meta, unless the handler put one
// there. The transport's paths and the server's direct answers
// (Backend.Direct), which encode their results themselves, all call it:
// the one rule for where a 2026-07-28 result's serverInfo goes.
func AnnotateServerInfo(res mcp.Result, impl *mcp.Implementation) {
	m := res.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m[mcp.MetaKeyServerInfo]; ok {
		return
	}
	m[mcp.MetaKeyServerInfo] = impl
	res.SetMeta(m)
}
