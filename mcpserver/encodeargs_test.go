package mcpserver

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestEncodeArgsIsMarshal: encodeArgs gives json.Marshal's bytes for every
// kind of value contracts.Validate decodes, large strings with escapes,
// multi-byte characters, invalid UTF-8 and U+2028 across its chunk
// boundaries included.
func TestEncodeArgsIsMarshal(t *testing.T) {
	mixed := strings.Repeat("a<é\u2028\xff\"\\\n\x01東&>", argsChunk/7)
	values := []any{
		nil, true, false, "", "x", json.Number("-1.5e3"),
		map[string]any{}, []any{}, []any(nil), map[string]any(nil),
		map[string]any{"b": 1.5, "a": []any{"<x>", nil, map[string]any{"é": "\xff"}}, "": json.Number("0")},
		strings.Repeat("a", 3*argsChunk+5),
		strings.Repeat("\x80", argsChunk+3), // no character boundary to cut at
		"é" + strings.Repeat("a", argsChunk-2) + "東東",
		mixed, mixed[1:], mixed[2:], mixed[3:],
		map[string]any{"path": "p", "content": mixed, "base_revision": json.Number("3")},
	}
	for i, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeArgs(v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Errorf("value %d: encodeArgs differs from json.Marshal (%d and %d bytes)", i, len(got), len(want))
		}
	}
}

// TestEncodeArgsAllocatesLittle: a 4 MiB string argument costs about one
// buffer of its size, not json.Marshal's three.
func TestEncodeArgsAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	v := map[string]any{"path": "p", "content": strings.Repeat("a", 4<<20)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := encodeArgs(v)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(out)+len(out)/4) {
		t.Errorf("encodeArgs of a %d-byte result allocated %d bytes, want at most 1.25 times the result", len(out), n)
	}
}

// FuzzEncodeArgs holds encodeArgs to json.Marshal for strings long enough to
// be cut, whatever bytes they hold.
func FuzzEncodeArgs(f *testing.F) {
	f.Add("a<é\u2028\xff\"\\\n\x01東&>", 1)
	f.Add("\xe2\x82", 2)
	f.Fuzz(func(t *testing.T, s string, shift int) {
		if s == "" {
			return
		}
		long := strings.Repeat("a", shift&0xff) + strings.Repeat(s, argsChunk/len(s)+2)
		v := map[string]any{"content": long}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeArgs(v)
		if err != nil || string(got) != string(want) {
			t.Errorf("encodeArgs(%q repeated) differs from json.Marshal (err %v)", s, err)
		}
	})
}
