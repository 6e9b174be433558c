package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/grep"
)

// maxQueryWords bounds the terms of one search.
const maxQueryWords = 32

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
		return tx.QueryRowContext(ctx, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
				principal_id, authority_tier, interaction, source, revision, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			src.Path, src.Content, a.SpeakerKind, a.SpeakerID, a.SpeakerDisplay, a.PrincipalID, a.Tier, a.Interaction, a.Source,
			out.Revision, now).Scan(&out.ID)
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
		if err := tx.QueryRowContext(ctx, `UPDATE memory_state SET revision = revision + 1,
				trusted = trusted + NOT EXISTS (SELECT 1 FROM memory_trusted WHERE path = ?)
			WHERE id = 1 RETURNING revision`, page.Path).Scan(&page.Revision); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO memory_trusted (path, content, revision, source_id, updated_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (path) DO UPDATE SET content = excluded.content, revision = excluded.revision,
				source_id = excluded.source_id, updated_at = excluded.updated_at`,
			page.Path, page.Content, page.Revision, sourceID, now)
		return err
	})
	if err != nil {
		return sessions.TrustedPage{}, fmt.Errorf("promote memory source %d: %w", sourceID, err)
	}
	page.SourceID, page.UpdatedAt = sourceID, fromMicros(now)
	return page, nil
}

// ftsQuery turns plain words into an FTS5 query: each whitespace chunk a
// quoted phrase, all phrases required. The words hold only letters, digits
// and marks, so no user text is ever FTS5 syntax.
func ftsQuery(words [][]string) string {
	var b strings.Builder
	for i, g := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.Join(g, " "))
		b.WriteByte('"')
	}
	return b.String()
}

// SearchMemory implements [sessions.Store] with FTS5 and bm25 over each
// layer; Score is -bm25, so higher is better.
func (s *Store) SearchMemory(ctx context.Context, query string, topK int, pathPrefix string) ([]sessions.MemoryHit, error) {
	if sessions.HasNUL(pathPrefix) {
		return nil, nil
	}
	words := grep.Words(query, maxQueryWords)
	if len(words) == 0 || topK <= 0 {
		return []sessions.MemoryHit{}, nil
	}
	match := ftsQuery(words)
	cond, condArgs := pathRange("d.path", pathPrefix)
	var hits []sessions.MemoryHit
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		for _, layer := range []struct{ name, fts, table, idCol string }{
			{sessions.LayerTrusted, "memory_trusted_fts", "memory_trusted", "d.source_id"},
			{sessions.LayerSource, "memory_sources_fts", "memory_sources", "d.id"},
		} {
			// Rank inside FTS5 first and join only the top k, unless the
			// path filter has to see every match or (trusted pages) the
			// tie-break needs the joined source id. A source's rowid is
			// its id, so ties are cut by id inside FTS5 too.
			q := `SELECT d.path, d.id, d.content, t.score FROM (
					SELECT rowid AS rid, -rank AS score FROM ` + layer.fts + ` WHERE ` + layer.fts + ` MATCH ? ORDER BY rank, rowid LIMIT ?
				) t JOIN ` + layer.table + ` d ON d.id = t.rid ORDER BY t.score DESC, d.id`
			args := []any{match, topK}
			if pathPrefix != "" || layer.name == sessions.LayerTrusted {
				q = `SELECT d.path, ` + layer.idCol + `, d.content, -f.rank FROM ` + layer.fts + ` f
					JOIN ` + layer.table + ` d ON d.id = f.rowid
					WHERE ` + layer.fts + ` MATCH ? AND ` + cond + ` ORDER BY f.rank, ` + layer.idCol + ` LIMIT ?`
				args = append(append([]any{match}, condArgs...), topK)
			}
			rows, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				h := sessions.MemoryHit{Layer: layer.name}
				var content string
				if err := rows.Scan(&h.Path, &h.SourceID, &content, &h.Score); err != nil {
					rows.Close()
					return err
				}
				h.Snippet = grep.Excerpt(content, words)
				hits = append(hits, h)
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	sort.Slice(hits, func(i, j int) bool { return hitBefore(hits[i], hits[j]) })
	if len(hits) > topK {
		hits = hits[:topK]
	}
	return hits, nil
}

// hitBefore orders search hits best first; equal scores put trusted pages
// before sources, then the lower source id first, as the PostgreSQL
// backend's ORDER BY does.
func hitBefore(a, b sessions.MemoryHit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Layer != b.Layer {
		return a.Layer == sessions.LayerTrusted
	}
	return a.SourceID < b.SourceID
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
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
	case isASCII(substring): // SQLite's lower() folds ASCII only
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
		rows, err := tx.QueryContext(ctx, `SELECT `+sourceColumns+` FROM memory_sources WHERE path = ? ORDER BY id`, path)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			src, err := scanSource(rows)
			if err != nil {
				return err
			}
			page.Sources = append(page.Sources, src)
			page.Revision = max(page.Revision, src.Revision)
		}
		return rows.Err()
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
