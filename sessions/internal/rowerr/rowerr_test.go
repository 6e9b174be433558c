package rowerr

import (
	"errors"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

var errNoRows = errors.New("no rows")

func TestGet(t *testing.T) {
	read := func(v string, err error) func() (string, error) {
		return func() (string, error) { return v, err }
	}
	if _, err := Get("session", "a\x00", errNoRows, func() (string, error) {
		t.Error("read ran for an id with U+0000")
		return "", nil
	}); !errors.Is(err, sessions.ErrNotFound) || err.Error() != "session: "+sessions.ErrNotFound.Error() {
		t.Errorf("Get(NUL id) error = %v, want session: ErrNotFound", err)
	}
	if _, err := Get("session", "x", errNoRows, read("", errNoRows)); !errors.Is(err, sessions.ErrNotFound) ||
		err.Error() != `get session "x": `+sessions.ErrNotFound.Error() {
		t.Errorf("Get(no row) error = %v, want ErrNotFound", err)
	}
	boom := errors.New("boom")
	if v, err := Get("message", "x", errNoRows, read("half", boom)); !errors.Is(err, boom) || v != "" ||
		err.Error() != `get message "x": boom` {
		t.Errorf("Get(failure) = %q, %v; want \"\", the wrapped error", v, err)
	}
	if v, err := Get("message", "x", errNoRows, read("m", nil)); err != nil || v != "m" {
		t.Errorf("Get(row) = %q, %v; want m", v, err)
	}
}
