package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/openprogram/openprogram/internal/clip"
)

// argsChunk is the longest piece of a string encodeArgs hands to
// json.Marshal at once.
const argsChunk = 64 << 10

// encodeArgs returns json.Marshal(v), byte for byte, for a value as
// contracts.Validate decodes it (maps, slices, strings, json.Number, bool,
// nil), built in one buffer of about its size. json.Marshal would copy a
// large string three times over (into its buffer, into that buffer grown,
// and out); here a string longer than argsChunk is encoded by json.Marshal
// in pieces cut on character boundaries, which encode to the same bytes as
// the whole (escaping is per character), so a maximal memory content
// (16 MiB) is copied once. Maps are written with their keys sorted, as
// json.Marshal writes them.
func encodeArgs(v any) ([]byte, error) {
	return appendArgs(make([]byte, 0, argsSize(v)), v)
}

// argsSize estimates the encoded size of v: exact for plain strings, short
// by the escapes otherwise.
func argsSize(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + argsSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += 1 + argsSize(e)
		}
		return n
	case string:
		return len(v) + 2
	default:
		return 8
	}
}

// appendArgs appends v as encodeArgs encodes it.
func appendArgs(dst []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendArgs(dst, k); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendArgs(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendArgs(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case string:
		if len(v) <= argsChunk {
			break
		}
		// Each piece is encoded into one reused scratch buffer: an Encoder
		// writes json.Marshal's bytes and a newline, and allocates nothing
		// per piece.
		var scratch sliceWriter
		enc := json.NewEncoder(&scratch)
		dst = append(dst, '"')
		for len(v) > 0 {
			n := clip.Cut(v, argsChunk)
			if n == 0 { // no character boundary before argsChunk
				n = clip.Next(v, argsChunk)
			}
			scratch = scratch[:0]
			if err := enc.Encode(v[:n]); err != nil {
				return nil, err
			}
			dst = append(dst, scratch[1:len(scratch)-2]...) // without the quotes and the newline
			v = v[n:]
		}
		return append(dst, '"'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// sliceWriter is an io.Writer that appends to itself.
type sliceWriter []byte

func (w *sliceWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
