package jsonwire

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v like json.Marshal but without HTML escaping: compact,
// no trailing newline, and <, > and & written as themselves. Errors are
// encoding/json's, unwrapped.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
