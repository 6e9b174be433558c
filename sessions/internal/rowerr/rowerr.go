// Package rowerr reads rows the same way for every store backend: what
// came of a statement on one row named by its id (no such row is
// [sessions.ErrNotFound], anything else is wrapped with what was done),
// and [Each], the walk over a query's rows.
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

// Scanner reads one row: a single-row result, or the current row of Rows.
type Scanner interface{ Scan(dest ...any) error }

// Rows is a query's result as each driver hands it over (database/sql's
// *sql.Rows, pgx.Rows), but for Close, whose signatures differ.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Each feeds the rows, read by scan, to fn in order until fn returns false,
// then closes them with closeRows (also when scan fails) and returns the
// error of scan or, after the close, of the driver.
func Each[T any](rows Rows, closeRows func(), scan func(Scanner) (T, error), fn func(T) bool) error {
	defer closeRows()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		if !fn(v) {
			break
		}
	}
	closeRows()
	return rows.Err()
}
