package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/fulltext"
	"github.com/openprogram/openprogram/sessions/internal/grep"
)

// pathRange returns the SQL condition selecting paths that start with
// prefix, as an index-friendly byte range, and its arguments.
func pathRange(col, prefix string) (string, []any) {
	if prefix == "" {
		return "1", nil
	}
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return col + " >= ?", []any{prefix}
	}
	b[len(b)-1]++
	return col + " >= ? AND " + col + " < ?", []any{prefix, string(b)}
}

func pathRevision(ctx context.Context, tx *sql.Tx, path string) (int64, error) {
	var rev int64
	err := tx.QueryRowContext(ctx, `SELECT max(
		coalesce((SELECT max(revision) FROM memory_sources WHERE path = ?1), 0),
		coalesce((SELECT revision FROM memory_trusted WHERE path = ?1), 0))`, path).Scan(&rev)
	return rev, err
}

func checkBase(ctx context.Context, tx *sql.Tx, path string, base int64) error {
	if base < 0 {
		return nil
	}
	rev, err := pathRevision(ctx, tx, path)
	if err != nil {
		return err
	}
	if rev != base {
		return fmt.Errorf("path %q is at revision %d, not %d: %w", path, rev, base, sessions.ErrConflict)
	}
	return nil
}

// MemoryStatus implements [sessions.Store].
func (s *Store) MemoryStatus(ctx context.Context) (sessions.MemoryStatus, error) {
	var st sessions.MemoryStatus
	err := s.r.QueryRowContext(ctx, `SELECT sources, trusted, revision FROM memory_state WHERE id = 1`).
		Scan(&st.Sources, &st.TrustedPages, &st.Revision)
	if err != nil {
		return sessions.MemoryStatus{}, fmt.Errorf("memory status: %w", err)
	}
	return st, nil
}

// AppendSource implements [sessions.Store].
func (s *Store) AppendSource(ctx context.Context, src sessions.NewSource, baseRevision int64) (sessions.Source, error) {
	if err := src.CheckText(); err != nil {
		return sessions.Source{}, err
	}
	if src.Path == "" {
		return sessions.Source{}, errors.New("append memory source: empty path")
	}
	out := sessions.Source{Path: src.Path, Content: src.Content, Authority: src.Authority}
	now := nowMicros()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := checkBase(ctx, tx, src.Path, baseRevision); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE memory_state SET revision = revision + 1, sources = sources + 1
			WHERE id = 1 RETURNING revision`).Scan(&out.Revision); err != nil {
			return err
		}
		a := src.Authority
		if err := tx.QueryRowContext(ctx, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
				principal_id, authority_tier, interaction, source, revision, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			src.Path, src.Content, a.SpeakerKind, a.SpeakerID, a.SpeakerDisplay, a.PrincipalID, a.Tier, a.Interaction, a.Source,
			out.Revision, now).Scan(&out.ID); err != nil {
			return err
		}
		return writePostings(ctx, tx, fulltext.LayerSource, out.ID, src.Content)
	})
	if err != nil {
		return sessions.Source{}, fmt.Errorf("append memory source %q: %w", src.Path, err)
	}
	out.CreatedAt = fromMicros(now)
	return out, nil
}

// Promote implements [sessions.Store].
func (s *Store) Promote(ctx context.Context, sourceID int64, baseRevision int64) (sessions.TrustedPage, error) {
	var page sessions.TrustedPage
	now := nowMicros()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT path, content FROM memory_sources WHERE id = ?`, sourceID).Scan(&page.Path, &page.Content)
		if errors.Is(err, sql.ErrNoRows) {
			return sessions.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := checkBase(ctx, tx, page.Path, baseRevision); err != nil {
			return err
		}
		var old doc
		err = tx.QueryRowContext(ctx, `SELECT source_id, content FROM memory_trusted WHERE path = ?`, page.Path).Scan(&old.id, &old.content)
		hadPage := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE memory_state SET revision = revision + 1, trusted = trusted + ?
			WHERE id = 1 RETURNING revision`, !hadPage).Scan(&page.Revision); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO memory_trusted (path, content, revision, source_id, updated_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (path) DO UPDATE SET content = excluded.content, revision = excluded.revision,
				source_id = excluded.source_id, updated_at = excluded.updated_at`,
			page.Path, page.Content, page.Revision, sourceID, now); err != nil {
			return err
		}
		// The same source promoted again keeps its postings.
		if hadPage && old.id == sourceID {
			return nil
		}
		if hadPage {
			if err := deletePostings(ctx, tx, fulltext.LayerTrusted, old.id, old.content); err != nil {
				return err
			}
		}
		return writePostings(ctx, tx, fulltext.LayerTrusted, sourceID, page.Content)
	})
	if err != nil {
		return sessions.TrustedPage{}, fmt.Errorf("promote memory source %d: %w", sourceID, err)
	}
	page.SourceID, page.UpdatedAt = sourceID, fromMicros(now)
	return page, nil
}

// SearchMemory implements [sessions.Store] with package fulltext over the
// memory_terms postings, read in one snapshot.
func (s *Store) SearchMemory(ctx context.Context, query string, topK int, pathPrefix string) ([]sessions.MemoryHit, error) {
	if sessions.HasNUL(pathPrefix) {
		return nil, nil
	}
	cond, condArgs := pathRange("d.path", pathPrefix)
	var hits []sessions.MemoryHit
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		hits, err = fulltext.Search(ctx, query, topK, postingReader{tx: tx, cond: cond, condArgs: condArgs})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	return hits, nil
}

// postingReader reads memory_terms and the documents for fulltext.Search
// within tx, keeping the documents that satisfy cond (the path prefix, on
// d.path; "1" for none).
type postingReader struct {
	tx       *sql.Tx
	cond     string
	condArgs []any
}

// Postings implements [fulltext.Reader]: a range scan of the primary key
// per request (in-process, so one query each of one prepared statement),
// joined with the
// documents only to apply a path prefix.
func (r postingReader) Postings(ctx context.Context, layer int, reqs []fulltext.Request) ([][]fulltext.Entry, error) {
	q := `SELECT p.rank, p.id FROM memory_terms p
		WHERE p.layer = ? AND p.term = ? AND (p.rank, p.id) > (?, ?) ORDER BY p.rank, p.id LIMIT ?`
	if len(r.condArgs) > 0 {
		table, id := fulltext.DocTable(layer)
		q = `SELECT p.rank, p.id FROM memory_terms p JOIN ` + table + ` d ON d.` + id + ` = p.id
			WHERE p.layer = ? AND p.term = ? AND (p.rank, p.id) > (?, ?) AND ` + r.cond + `
			ORDER BY p.rank, p.id LIMIT ?`
	}
	stmt, err := r.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	out := make([][]fulltext.Entry, len(reqs))
	for i, req := range reqs {
		args := append(append([]any{layer, req.Term, req.After.Rank, req.After.ID}, r.condArgs...), req.N)
		rows, err := stmt.QueryContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var e fulltext.Entry
			if err := rows.Scan(&e.Rank, &e.ID); err != nil {
				rows.Close()
				return nil, err
			}
			out[i] = append(out[i], e)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Documents implements [fulltext.Reader].
func (r postingReader) Documents(ctx context.Context, layer int, ids []int64) ([]fulltext.Document, error) {
	table, id := fulltext.DocTable(layer)
	args := make([]any, 0, len(ids)+len(r.condArgs))
	for _, v := range ids {
		args = append(args, v)
	}
	rows, err := r.tx.QueryContext(ctx, `SELECT d.`+id+`, d.path, d.content FROM `+table+` d
		WHERE d.`+id+` IN (`+strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`) AND `+r.cond,
		append(args, r.condArgs...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []fulltext.Document
	for rows.Next() {
		var d fulltext.Document
		if err := rows.Scan(&d.ID, &d.Path, &d.Content); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// postingBatch is how many postings one INSERT writes (four parameters
// each, well under SQLite's limit of 32,766).
const postingBatch = 250

// postingWriter writes postings in multi-row INSERTs within tx, to
// memory_terms unless table names another.
type postingWriter struct {
	ctx   context.Context
	tx    *sql.Tx
	table string
	args  []any
	full  *sql.Stmt // the INSERT of postingBatch rows, prepared once
}

// add queues the postings of a document's text under (layer, id).
func (w *postingWriter) add(layer int, id int64, content string) error {
	for _, p := range fulltext.Index(content) {
		w.args = append(w.args, layer, p.Term, p.Rank, id)
		if len(w.args) == 4*postingBatch {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the queued postings.
func (w *postingWriter) flush() error {
	if len(w.args) == 0 {
		return nil
	}
	table := w.table
	if table == "" {
		table = "memory_terms"
	}
	q := "INSERT INTO " + table + " (layer, term, rank, id) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?),", len(w.args)/4), ",")
	var err error
	switch {
	case len(w.args) < 4*postingBatch:
		_, err = w.tx.ExecContext(w.ctx, q, w.args...)
	case w.full == nil:
		if w.full, err = w.tx.PrepareContext(w.ctx, q); err == nil {
			_, err = w.full.ExecContext(w.ctx, w.args...)
		}
	default:
		_, err = w.full.ExecContext(w.ctx, w.args...)
	}
	w.args = w.args[:0]
	if err != nil {
		return fmt.Errorf("write search postings: %w", err)
	}
	return nil
}

// close writes what is queued and releases the prepared statement.
func (w *postingWriter) close() error {
	err := w.flush()
	if w.full != nil {
		err = errors.Join(err, w.full.Close())
	}
	return err
}

// writePostings writes the postings of one document.
func writePostings(ctx context.Context, tx *sql.Tx, layer int, id int64, content string) error {
	w := postingWriter{ctx: ctx, tx: tx}
	if err := w.add(layer, id, content); err != nil {
		return errors.Join(err, w.close())
	}
	return w.close()
}

// deletePostings removes the postings of one document, found again from
// its text.
func deletePostings(ctx context.Context, tx *sql.Tx, layer int, id int64, content string) error {
	ps := fulltext.Index(content)
	for len(ps) > 0 {
		chunk := ps[:min(len(ps), postingBatch)]
		ps = ps[len(chunk):]
		args := make([]any, 0, 4*len(chunk))
		for _, p := range chunk {
			args = append(args, layer, p.Term, p.Rank, id)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_terms WHERE (layer, term, rank, id) IN (VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?),", len(chunk)), ",")+`)`, args...); err != nil {
			return fmt.Errorf("remove search postings: %w", err)
		}
	}
	return nil
}

// ReindexMemory rewrites the memory search index from the stored sources
// and trusted pages, in one write transaction: for rows loaded around the
// store (a bulk import with plain SQL), or to repair the index. Searches
// see the old index until it commits.
func (s *Store) ReindexMemory(ctx context.Context) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_terms`); err != nil {
			return err
		}
		return indexMemory(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("reindex memory: %w", err)
	}
	return nil
}

// indexMemory writes the postings of every stored source and trusted page:
// the Go half of migration 3, in its transaction. The postings go to a
// temporary table first and into memory_terms in key order, which builds
// its b-tree in one pass (for 100,000 sources 7.2 s instead of 10 s with
// each document's postings inserted where they belong; the rest of the
// time is the sort and the tokenizer).
func indexMemory(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE memory_terms_load (layer INTEGER, term TEXT, rank INTEGER, id INTEGER)`); err != nil {
		return fmt.Errorf("index memory: %w", err)
	}
	w := postingWriter{ctx: ctx, tx: tx, table: "temp.memory_terms_load"}
	for _, layer := range []int{fulltext.LayerSource, fulltext.LayerTrusted} {
		table, id := fulltext.DocTable(layer)
		query := `SELECT ` + id + `, content FROM ` + table + ` WHERE ` + id + ` > ? ORDER BY ` + id + ` LIMIT 1000`
		for after := int64(-1); ; {
			docs, err := readDocs(ctx, tx, query, after)
			if err != nil {
				return fmt.Errorf("index memory: %w", err)
			}
			for _, d := range docs {
				if err := w.add(layer, d.id, d.content); err != nil {
					return fmt.Errorf("index memory: %w", err)
				}
				after = d.id
			}
			if len(docs) < 1000 {
				break
			}
		}
	}
	if err := w.close(); err != nil {
		return fmt.Errorf("index memory: %w", err)
	}
	for _, q := range []string{
		`INSERT INTO memory_terms (layer, term, rank, id)
			SELECT layer, term, rank, id FROM temp.memory_terms_load ORDER BY layer, term, rank, id`,
		`DROP TABLE temp.memory_terms_load`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("index memory: %w", err)
		}
	}
	return nil
}

type doc struct {
	id      int64
	content string
}

func readDocs(ctx context.Context, tx *sql.Tx, query string, after int64) ([]doc, error) {
	rows, err := tx.QueryContext(ctx, query, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []doc
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.id, &d.content); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// GrepMemory implements [sessions.Store]. SQL narrows to documents that
// contain the substring; lines are matched in Go. limit <= 0: no limit.
func (s *Store) GrepMemory(ctx context.Context, substring, pathPrefix string, caseSensitive bool, limit int) ([]sessions.MemoryHit, error) {
	if sessions.HasNUL(substring, pathPrefix) {
		return nil, nil
	}
	hits := []sessions.MemoryHit{}
	if substring == "" {
		return hits, nil
	}
	m := grep.New(substring, caseSensitive)
	filter := "1"
	var filterArgs []any
	switch {
	case caseSensitive:
		filter, filterArgs = "instr(d.content, ?) > 0", []any{substring}
	case grep.ASCII(substring): // SQLite's lower() folds ASCII only
		filter, filterArgs = "instr(lower(d.content), ?) > 0", []any{strings.ToLower(substring)}
	}
	cond, condArgs := pathRange("d.path", pathPrefix)
	q := `SELECT layer, path, sid, content FROM (
			SELECT 0 AS layer, d.path AS path, d.source_id AS sid, d.content AS content FROM memory_trusted d WHERE ` + cond + ` AND ` + filter + `
			UNION ALL
			SELECT 1, d.path, d.id, d.content FROM memory_sources d WHERE ` + cond + ` AND ` + filter + `
		) ORDER BY path, layer, sid`
	var args []any
	args = append(append(append(append(args, condArgs...), filterArgs...), condArgs...), filterArgs...)
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && (limit <= 0 || len(hits) < limit) {
			var (
				layer         int
				path, content string
				sid           int64
			)
			if err := rows.Scan(&layer, &path, &sid, &content); err != nil {
				return err
			}
			name := sessions.LayerSource
			if layer == 0 {
				name = sessions.LayerTrusted
			}
			m.Lines(content, func(line int, snippet string) bool {
				hits = append(hits, sessions.MemoryHit{Layer: name, Path: path, SourceID: sid, Snippet: snippet, Line: line})
				return limit <= 0 || len(hits) < limit
			})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("grep memory for %q: %w", substring, err)
	}
	return hits, nil
}

const sourceColumns = `id, path, content, speaker_kind, speaker_id, speaker_display, principal_id, authority_tier,
	interaction, source, revision, created_at`

func scanSource(r scanner) (sessions.Source, error) {
	var (
		src     sessions.Source
		created int64
	)
	a := &src.Authority
	if err := r.Scan(&src.ID, &src.Path, &src.Content, &a.SpeakerKind, &a.SpeakerID, &a.SpeakerDisplay, &a.PrincipalID,
		&a.Tier, &a.Interaction, &a.Source, &src.Revision, &created); err != nil {
		return sessions.Source{}, err
	}
	src.CreatedAt = fromMicros(created)
	return src, nil
}

// GetMemory implements [sessions.Store].
func (s *Store) GetMemory(ctx context.Context, path string) (sessions.MemoryPage, error) {
	if sessions.HasNUL(path) {
		return sessions.MemoryPage{}, fmt.Errorf("memory path: %w", sessions.ErrNotFound)
	}
	page := sessions.MemoryPage{Path: path}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var (
			tp      sessions.TrustedPage
			updated int64
		)
		err := tx.QueryRowContext(ctx, `SELECT path, content, revision, source_id, updated_at FROM memory_trusted WHERE path = ?`, path).
			Scan(&tp.Path, &tp.Content, &tp.Revision, &tp.SourceID, &updated)
		switch {
		case err == nil:
			tp.UpdatedAt = fromMicros(updated)
			page.Trusted = &tp
			page.Revision = tp.Revision
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		return eachRow(func() (*sql.Rows, error) {
			return tx.QueryContext(ctx, `SELECT `+sourceColumns+` FROM memory_sources WHERE path = ? ORDER BY id`, path)
		}, scanSource, func(src sessions.Source) bool {
			page.Sources = append(page.Sources, src)
			page.Revision = max(page.Revision, src.Revision)
			return true
		})
	})
	if err != nil {
		return sessions.MemoryPage{}, fmt.Errorf("get memory %q: %w", path, err)
	}
	if page.Trusted == nil && len(page.Sources) == 0 {
		return sessions.MemoryPage{}, fmt.Errorf("get memory %q: %w", path, sessions.ErrNotFound)
	}
	return page, nil
}

// BrowseMemory implements [sessions.Store].
func (s *Store) BrowseMemory(ctx context.Context, prefix string) ([]sessions.MemoryEntry, error) {
	if sessions.HasNUL(prefix) {
		return nil, nil
	}
	cond, condArgs := pathRange("path", prefix)
	q := `SELECT path, sum(n), max(trusted), max(rev), max(upd) FROM (
			SELECT path, count(*) AS n, 0 AS trusted, max(revision) AS rev, max(created_at) AS upd
			FROM memory_sources WHERE ` + cond + ` GROUP BY path
			UNION ALL
			SELECT path, 0, 1, revision, updated_at FROM memory_trusted WHERE ` + cond + `
		) GROUP BY path ORDER BY path`
	rows, err := s.r.QueryContext(ctx, q, append(append([]any{}, condArgs...), condArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("browse memory %q: %w", prefix, err)
	}
	defer rows.Close()
	out := []sessions.MemoryEntry{}
	for rows.Next() {
		var (
			e       sessions.MemoryEntry
			trusted int
			upd     int64
		)
		if err := rows.Scan(&e.Path, &e.Sources, &trusted, &e.Revision, &upd); err != nil {
			return nil, fmt.Errorf("browse memory %q: %w", prefix, err)
		}
		e.Trusted, e.UpdatedAt = trusted != 0, fromMicros(upd)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("browse memory %q: %w", prefix, err)
	}
	return out, nil
}
