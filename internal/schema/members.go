package schema

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/canonjson"
)

// Members calls fn with every member of obj, one JSON object, in order: the
// member's name (unescaped), its bytes from key to value, and its value's
// bytes. Both slices share obj's memory. obj is scanned once without
// decoding anything but escaped names, and string contents are skipped in
// bulk, so a large value costs little. obj must be valid JSON (check it
// first, with json.Valid); for anything else the calls are unreliable, but
// Members neither panics nor reads past obj.
func Members(obj []byte, fn func(name string, member, value []byte)) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		keyEnd := skipValue(obj, i)
		colon := skipSpace(obj, keyEnd)
		if colon >= len(obj) || obj[colon] != ':' {
			return
		}
		valStart := skipSpace(obj, colon+1)
		if valStart >= len(obj) {
			return
		}
		valEnd := skipValue(obj, valStart)
		fn(memberName(obj[i:keyEnd]), obj[i:valEnd], obj[valStart:valEnd])
		i = skipSpace(obj, valEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

// memberName returns the name a member's key (a JSON string) stands for,
// as decoding reads it.
func memberName(key []byte) string {
	if len(key) < 2 {
		return ""
	}
	if bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) {
		return string(key[1 : len(key)-1])
	}
	// Decoding unescapes the name and replaces invalid UTF-8.
	var name string
	if json.Unmarshal(key, &name) != nil {
		return "" // not valid JSON
	}
	return name
}

// skipSpace returns the index of the first byte of data at or after i that
// is not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at i in
// data, which is valid JSON (at most len(data)).
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			if i = canonjson.StringEnd(data, i); i >= len(data) {
				return len(data)
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of an enclosing value
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i // the end of a number or literal
			}
		}
	}
	return len(data)
}
