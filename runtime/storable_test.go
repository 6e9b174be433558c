package runtime

import (
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

func TestStorable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"naïve ✓", "naïve ✓"},
		{"nul\x00byte", "nul\uFFFDbyte"},
		{"bad \xff\xfe utf8", "bad \uFFFD utf8"},
		{"\x00", "\uFFFD"},
		{"", ""},
	}
	for _, tt := range tests {
		msgs := []sessions.NewMessage{{Role: sessions.RoleTool, Content: tt.in}}
		got := storable(msgs)[0].Content
		if got != tt.want {
			t.Errorf("storable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
