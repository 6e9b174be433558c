package input

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

func TestAppend(t *testing.T) {
	ok := sessions.NewMessage{Role: sessions.RoleUser, Content: "hi"}
	if err := Append("s", "", []sessions.NewMessage{ok}); err != nil {
		t.Fatalf("Append(valid) = %v", err)
	}
	for _, tc := range []struct {
		name            string
		session, parent string
		msgs            []sessions.NewMessage
		want            string
		is              error
	}{
		{"NUL session", "s\x00", "", []sessions.NewMessage{ok}, "session or parent", sessions.ErrNotFound},
		{"NUL parent", "s", "p\x00", []sessions.NewMessage{ok}, "session or parent", sessions.ErrNotFound},
		{"none", "s", "", nil, "no messages", nil},
		{"role", "s", "", []sessions.NewMessage{ok, {Role: "robot"}}, `message 1 has role "robot"`, nil},
		{"metadata", "s", "", []sessions.NewMessage{{Role: sessions.RoleTool, Metadata: json.RawMessage(`{`)}}, "message 0 metadata is not valid JSON", nil},
		{"text", "s", "", []sessions.NewMessage{{Role: sessions.RoleUser, Content: "a\x00"}}, "", sessions.ErrInvalidText},
	} {
		err := Append(tc.session, tc.parent, tc.msgs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Append = %v, want %q (%v)", tc.name, err, tc.want, tc.is)
		}
	}
}

func TestUpdate(t *testing.T) {
	title, bad := "t", "a\x00"
	if err := Update("s", sessions.SessionUpdate{Title: &title}); err != nil {
		t.Errorf("Update(valid) = %v", err)
	}
	if err := Update("s\x00", sessions.SessionUpdate{}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Update(NUL id) = %v, want ErrNotFound", err)
	}
	if err := Update("s", sessions.SessionUpdate{Title: &bad}); !errors.Is(err, sessions.ErrInvalidText) {
		t.Errorf("Update(NUL title) = %v, want ErrInvalidText", err)
	}
}
