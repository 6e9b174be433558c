package taskrules

import (
	"errors"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

func TestCursorRoundTrip(t *testing.T) {
	created := time.UnixMicro(1_780_000_000_123_456).UTC()
	for _, id := range []string{"t", "task.with.dots", "ü-id"} {
		gotT, gotID, err := DecodeCursor(EncodeCursor(created, id))
		if err != nil || !gotT.Equal(created) || gotID != id {
			t.Errorf("DecodeCursor(EncodeCursor(%v, %q)) = %v, %q, %v", created, id, gotT, gotID, err)
		}
	}
	for _, bad := range []string{"", "t1.", "t2.MS50", "t1.MTIz", "t1.MTIzLg"} { // "123", "123."
		if _, _, err := DecodeCursor(bad); !errors.Is(err, sessions.ErrInvalidCursor) {
			t.Errorf("DecodeCursor(%q) error = %v, want ErrInvalidCursor", bad, err)
		}
	}
}

func TestLimit(t *testing.T) {
	for in, want := range map[int]int{-5: sessions.DefaultTaskPage, 0: sessions.DefaultTaskPage, 1: 1,
		sessions.MaxTaskPage: sessions.MaxTaskPage, sessions.MaxTaskPage + 1: sessions.MaxTaskPage} {
		if got := Limit(in); got != want {
			t.Errorf("Limit(%d) = %d, want %d", in, got, want)
		}
	}
}
