// Package canonjson writes the canonical JSON form of the OpenProgram wire
// payloads: compact, object keys sorted (by code point) at every depth, no
// HTML escaping, non-ASCII text kept as UTF-8, numbers kept exactly as their
// JSON literal.
package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// Marshal encodes v with encoding/json and returns its canonical form.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return Canonicalize(buf.Bytes())
}

// Canonicalize re-encodes one JSON value in canonical form. data must hold
// exactly one JSON value (surrounding whitespace allowed).
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(data))
	if err := write(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Decode decodes exactly one JSON value from data into fresh Go values:
// map[string]any, []any, string, json.Number, bool or nil. Trailing data
// after the value is an error.
//
// A value without numbers is decoded in place by json.Unmarshal, which
// reads data where it lies; only a value with numbers goes through a
// json.Decoder (for UseNumber), which copies data into a buffer it grows
// as it reads. Both accept exactly the same inputs and return the same
// values (FuzzDecode holds them to each other): large payloads are large
// strings, and a maximal request is decoded without extra copies of it.
func Decode(data []byte) (any, error) {
	if !hasNumber(data) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		return v, nil
	}
	return decodeNumbers(data)
}

// decodeNumbers is [Decode] through a json.Decoder with UseNumber.
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	return v, nil
}

// StringEnd returns the index of the quote that closes the JSON string
// whose opening quote is at i in data, or len(data) when the string is not
// closed. It jumps from quote or backslash to the next (an escaped byte
// cannot end the string): string contents are most of a large value, and
// every scanner of raw JSON in the module skips them with it.
func StringEnd(data []byte, i int) int {
	for i++; i < len(data); i += 2 {
		j := bytes.IndexAny(data[i:], `"\`)
		if j < 0 {
			return len(data)
		}
		if i += j; data[i] == '"' {
			return i
		}
	}
	return len(data)
}

// hasNumber reports whether data, read as JSON, has a byte outside its
// strings that can start a number (a digit or '-'). For valid JSON that is
// exactly whether it holds a number; for invalid JSON either answer is
// fine, as both ways of decoding refuse it.
func hasNumber(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			i = StringEnd(data, i)
		case c == '-' || c >= '0' && c <= '9':
			return true
		}
	}
	return false
}

func write(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(string(v))
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// Byte order of UTF-8 strings is code point order.
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := write(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonjson: unexpected decoded type %T", v)
	}
	return nil
}

const hex = "0123456789abcdef"

// writeString writes s as a JSON string; see [AppendString].
func writeString(b *bytes.Buffer, s string) {
	b.Write(AppendString(b.AvailableBuffer(), s))
}

// AppendString appends s to dst as a canonical JSON string and returns the
// extended slice. It escapes only what JSON requires: the quote, the
// backslash and control characters below U+0020. Everything else, U+2028
// and U+2029 included, is written as UTF-8. Invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is still to be copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, `\"`...)
			case '\\':
				dst = append(dst, `\\`...)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			case '\b':
				dst = append(dst, `\b`...)
			case '\f':
				dst = append(dst, `\f`...)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendCanonical appends the canonical form of the one JSON value in data
// (surrounding whitespace allowed) to dst; see [Canonicalize].
func AppendCanonical(dst, data []byte) ([]byte, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(dst)
	if err := write(out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
