package clients

import "testing"

func TestTOMLQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/usr/local/bin/openprogram", `"/usr/local/bin/openprogram"`},
		{`C:\path with "quotes"`, `"C:\\path with \"quotes\""`},
		{"tab\there\nnl", `"tab\u0009here\u000Anl"`},
		{"del\x7f", `"del\u007F"`},
		{"naïve", `"naïve"`},
	}
	for _, tt := range tests {
		if got := tomlQuote(tt.in); got != tt.want {
			t.Errorf("tomlQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
