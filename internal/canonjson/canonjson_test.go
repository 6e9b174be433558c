package canonjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[3,{"f":1,"e":2}],"c":null}}`, `{"a":{"c":null,"d":[3,{"e":2,"f":1}]},"b":1}`},
		{" [ 1 , 2.50 , -0 , 1E+2 , 12345678901234567890 ] ", `[1,2.50,-0,1E+2,12345678901234567890]`},
		{`"\u003c\u0026\u003e \u00e9 \ud83d\udc4b \u2028"`, "\"<&> é 👋 \u2028\""},
		{`"\/ \" \\ \b \f \n \r \t \u0000 \u001F \u007f"`, `"/ \" \\ \b \f \n \r \t \u0000 \u001f ` + "\x7f" + `"`},
		{`{"é":1,"z":2,"Z":3,"":4,"ab":5,"a":6}`, `{"":4,"Z":3,"a":6,"ab":5,"z":2,"é":1}`},
		{`true`, `true`},
		{`null`, `null`},
		{`{}`, `{}`},
		{`[]`, `[]`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Errorf("Canonicalize(%s) error: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tt.in, got, tt.want)
		}
		again, err := Canonicalize(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("Canonicalize is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

func TestCanonicalizeInvalid(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"a":1,}`, `{} {}`, `[] x`, `nul`, `{"a"}`} {
		if got, err := Canonicalize([]byte(in)); err == nil {
			t.Errorf("Canonicalize(%q) = %s, want an error", in, got)
		}
	}
}

func TestMarshal(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A int    `json:"a"`
	}
	got, err := Marshal(map[string]any{"k": inner{Z: "<é>", A: 1}, "b": []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":"aGk=","k":{"a":1,"z":"<é>"}}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	if _, err := Marshal(make(chan int)); err == nil {
		t.Errorf("Marshal(chan) succeeded, want an error")
	}
}

func TestDecodeKeepsNumbers(t *testing.T) {
	v, err := Decode([]byte(`{"n":12345678901234567890,"f":1.0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": json.Number("12345678901234567890"), "f": json.Number("1.0")}
	if !reflect.DeepEqual(want, v) {
		diff := fmt.Sprintf("- %#v\n+ %#v", want, v)
		t.Errorf("Decode mismatch (-want +got):\n%s", diff)
	}
}

// FuzzCanonicalize: canonical output is valid JSON, means the same as the
// input, and is a fixed point.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,{"d":null,"c":"\u2028"}],"a":"é"}`, `"\ud800"`, `[1e400]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q, not valid JSON", in, out)
		}
		var a, b any
		if json.Unmarshal(in, &a) == nil {
			if err := json.Unmarshal(out, &b); err != nil {
				t.Fatalf("unmarshal canonical %q: %v", out, err)
			}
			if !reflect.DeepEqual(a, b) {
				diff := fmt.Sprintf("- %#v\n+ %#v", a, b)
				t.Fatalf("Canonicalize(%q) changed the value (-in +out):\n%s", in, diff)
			}
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("Canonicalize not a fixed point: %q -> %q (%v)", out, again, err)
		}
	})
}

// FuzzAppendString: AppendString writes what Marshal writes for a string
// (encoding/json's escaping, then decoded and re-encoded canonically).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&> \u2028\u2029", "\x00\x1f\x7f\b\f\n\r\t\"\\", "a\xffb\xe2\x80", "日本語 👋"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := Marshal(s)
		if err != nil {
			t.Fatalf("Marshal(%q): %v", s, err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %q, want %q", s, got[1:], want)
		}
	})
}

// FuzzDecode holds Decode to the json.Decoder it stands in for: the same
// inputs accepted, the same values returned.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"a":"b"}`, ` {"a":["x",true,null,{"b":"c"}]} `, `{"n":1}`, `"s\"1"`, `"a\\"1`,
		`{"a":"\u00e9\ud800"}`, `{"a":"b"} x`, `{"a":"b"}}`, ``, ` `, `[-1]`, `"\xff"`,
		`{"a":"b","a":"c"}`, `{"a":"9\\\"8"}`, `{"a" "b"}`, `1e400`, `"x`, `tru`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := Decode(data)
		want, wantErr := decodeNumbers(data)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("Decode(%q) error %v, json.Decoder error %v", data, gotErr, wantErr)
		}
		if !reflect.DeepEqual(want, got) {
			diff := fmt.Sprintf("- %#v\n+ %#v", want, got)
			t.Fatalf("Decode(%q) mismatch (-json.Decoder +Decode):\n%s", data, diff)
		}
	})
}

func TestHasNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"a":"1"}`, false},
		{`{"a":"\"1"}`, false},
		{`{"a":"\\",1:2}`, true},
		{`{"a":"x\\\"9"}`, false},
		{`[true,null,false]`, false},
		{`{"a":-0.5}`, true},
		{`3`, true},
		{`"unterminated 1`, false},
	} {
		if got := hasNumber([]byte(tc.in)); got != tc.want {
			t.Errorf("hasNumber(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func BenchmarkDecodeLargeString(b *testing.B) {
	data := []byte(`{"path":"p","content":"` + strings.Repeat("a", 16<<20) + `"}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeNumbersLargeString(b *testing.B) {
	data := []byte(`{"path":"p","content":"` + strings.Repeat("a", 16<<20) + `"}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decodeNumbers(data); err != nil {
			b.Fatal(err)
		}
	}
}
