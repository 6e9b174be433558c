// Package rowerr says, the same way for every store backend, what came of
// a statement on one row named by its id: no such row is
// [sessions.ErrNotFound], anything else is wrapped with what was done.
package rowerr

import (
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/sessions"
)

// Get reads the what (a "session", a "message") with id by read, whose
// driver reports a missing row as noRows. An id holding U+0000 names no
// row and is not looked up.
func Get[T any](what, id string, noRows error, read func() (T, error)) (T, error) {
	if sessions.HasNUL(id) {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, sessions.ErrNotFound)
	}
	v, err := read()
	return One(fmt.Sprintf("get %s %q", what, id), noRows, v, err)
}

// One is the outcome (v, err) of op, a statement on one row whose driver
// reports a missing row as noRows: err noRows becomes
// sessions.ErrNotFound, every error is wrapped with op.
func One[T any](op string, noRows error, v T, err error) (T, error) {
	var zero T
	if errors.Is(err, noRows) {
		return zero, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
	}
	if err != nil {
		return zero, fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}
