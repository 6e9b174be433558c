package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestMembers: every member of an object, found where it lies, agrees with
// decoding the object into a map of raw values (escaped names unescaped,
// whitespace around values left out).
func TestMembers(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		` { } `,
		`{"a":1}`,
		`{"a":"x\"}{","b":[1,{"c":"]"}],"d":{"e":null},"f":true,"g":-1.5e3}`,
		"{\r\n \"a\" :\t\"\\\\\" , \"b\" : [ ] \n}",
		`{"\u0061":1,"a\\b":"\\"}`,
		`{"big":"` + strings.Repeat("x", 100000) + `","after":2}`,
	} {
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(obj), &want); err != nil {
			t.Fatalf("the test's object %.40s is not JSON: %v", obj, err)
		}
		got := map[string]json.RawMessage{}
		Members([]byte(obj), func(name string, member, value []byte) {
			if !strings.HasSuffix(string(member), string(value)) || member[0] != '"' {
				t.Errorf("Members(%.40s): member %.40s does not run from a key to the value %.40s", obj, member, value)
			}
			got[name] = value
		})
		if !reflect.DeepEqual(want, got) {
			diff := fmt.Sprintf("- %#v\n+ %#v", want, got)
			t.Errorf("Members(%.40s) (-decoded +got):\n%.400s", obj, diff)
		}
	}
}

// TestMembersOfNotJSON: what is not valid JSON gives unreliable calls, but
// never a panic.
func TestMembersOfNotJSON(t *testing.T) {
	for _, s := range []string{``, `{`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":"\`, `{"a":[`, `{"a":1,`, `{"a":1,"`, `[1]`, `"x"`, `{"a"1}`, `{]`, `{"a":}}}`} {
		Members([]byte(s), func(string, []byte, []byte) {})
	}
}

// FuzzMembers holds Members to decoding for every valid JSON object.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\"","b":[{"c":"}"}]}`, `{"\u00e9":1,"a":2,"a":3}`, `{"a":"\\\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Members([]byte(s), func(string, []byte, []byte) {})
		want := map[string]json.RawMessage{}
		if !json.Valid([]byte(s)) || json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		got := map[string]json.RawMessage{}
		Members([]byte(s), func(name string, _, value []byte) { got[name] = value })
		if !reflect.DeepEqual(want, got) {
			diff := fmt.Sprintf("- %#v\n+ %#v", want, got)
			t.Errorf("Members(%q) (-decoded +got):\n%s", s, diff)
		}
	})
}
