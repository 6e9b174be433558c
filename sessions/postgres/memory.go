package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/fulltext"
	"github.com/openprogram/openprogram/sessions/internal/grep"
)

// Memory writes lock the single memory_state row first: that serialises
// them across processes, so revisions are handed out in commit order and a
// path's revision check and the write that follows it are atomic. The lock
// is its own statement: in READ COMMITTED the statements after it take a
// fresh snapshot and so see the previous holder's writes (a join in the
// locking statement itself would read the other tables' rows as they were
// before the wait).

// lockMemory takes the memory write lock and returns the global revision,
// then runs read in the same round trip.
func lockMemory(ctx context.Context, tx pgx.Tx, read string, args []any, dest ...any) (global int64, err error) {
	b := &pgx.Batch{}
	b.Queue("SELECT revision FROM memory_state FOR UPDATE")
	b.Queue(read, args...)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if err := br.QueryRow().Scan(&global); err != nil {
		return 0, err
	}
	if err := br.QueryRow().Scan(dest...); err != nil {
		return 0, err
	}
	return global, br.Close()
}

// MemoryStatus counts sources and trusted pages and reports the current
// global revision, from counters kept in memory_state.
func (s *Store) MemoryStatus(ctx context.Context) (sessions.MemoryStatus, error) {
	var st sessions.MemoryStatus
	err := s.run(ctx, func(q querier) error {
		return q.QueryRow(ctx, "SELECT sources, trusted_pages, revision FROM memory_state").
			Scan(&st.Sources, &st.TrustedPages, &st.Revision)
	})
	if err != nil {
		return sessions.MemoryStatus{}, fmt.Errorf("memory status: %w", err)
	}
	return st, nil
}

func checkPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return errors.New("memory path is empty")
	}
	return nil
}

func conflict(path string, base, current int64) error {
	return fmt.Errorf("path %q is at revision %d, not the base revision %d; read it again and retry: %w",
		path, current, base, sessions.ErrConflict)
}

// AppendSource appends an immutable source at src.Path with the next
// global revision. With baseRevision >= 0 it fails with ErrConflict unless
// the path's revision is still baseRevision (0 for a new path).
func (s *Store) AppendSource(ctx context.Context, src sessions.NewSource, baseRevision int64) (sessions.Source, error) {
	if err := src.CheckText(); err != nil {
		return sessions.Source{}, err
	}
	if err := checkPath(src.Path); err != nil {
		return sessions.Source{}, fmt.Errorf("append memory source: %w", err)
	}
	if err := errors.Join(checkText("path", src.Path), checkText("content", src.Content)); err != nil {
		return sessions.Source{}, fmt.Errorf("append memory source at %q: %w", src.Path, err)
	}
	out := sessions.Source{Path: src.Path, Content: src.Content, Authority: src.Authority}
	terms, ranks := postings(src.Content)
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		var pathRev int64
		global, err := lockMemory(ctx, tx, `SELECT COALESCE((SELECT revision FROM memory_paths WHERE path = $1), 0)`,
			[]any{src.Path}, &pathRev)
		if err != nil {
			return err
		}
		if baseRevision >= 0 && pathRev != baseRevision {
			return conflict(src.Path, baseRevision, pathRev)
		}
		out.Revision = global + 1
		a := src.Authority
		return tx.QueryRow(ctx, `WITH src AS (
				INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
					principal_id, authority_tier, interaction, source, revision, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())
				RETURNING id, created_at
			), p AS (
				INSERT INTO memory_paths AS p (path, revision, sources, updated_at) VALUES ($1, $10, 1, now())
				ON CONFLICT (path) DO UPDATE SET revision = EXCLUDED.revision, sources = p.sources + 1,
					updated_at = EXCLUDED.updated_at
			), st AS (
				UPDATE memory_state SET revision = $10, sources = sources + 1
			), terms AS (
				INSERT INTO memory_terms (layer, term, rank, id)
				SELECT 1, u.term, u.rank, src.id FROM src, unnest($11::text[], $12::int4[]) AS u(term, rank)
			)
			SELECT id, created_at FROM src`,
			src.Path, src.Content, a.SpeakerKind, a.SpeakerID, a.SpeakerDisplay, a.PrincipalID, a.Tier,
			a.Interaction, a.Source, out.Revision, terms, ranks).Scan(&out.ID, &out.CreatedAt)
	})
	if err != nil {
		return sessions.Source{}, fmt.Errorf("append memory source at %q: %w", src.Path, err)
	}
	return out, nil
}

// Promote copies a source's content to the trusted page at the source's
// path, with the next global revision. ErrNotFound for an unknown source;
// baseRevision is checked as in AppendSource.
func (s *Store) Promote(ctx context.Context, sourceID int64, baseRevision int64) (sessions.TrustedPage, error) {
	out := sessions.TrustedPage{SourceID: sourceID}
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		var (
			pathRev       int64
			path, content *string
			oldID         *int64
			oldContent    *string
		)
		global, err := lockMemory(ctx, tx, `SELECT src.path, src.content, COALESCE(p.revision, 0), t.source_id, t.content
			FROM (SELECT 1) one
			LEFT JOIN memory_sources src ON src.id = $1
			LEFT JOIN memory_paths p ON p.path = src.path
			LEFT JOIN memory_trusted t ON t.path = src.path`, []any{sourceID}, &path, &content, &pathRev, &oldID, &oldContent)
		if err != nil {
			return err
		}
		if path == nil {
			return fmt.Errorf("source %d %w", sourceID, sessions.ErrNotFound)
		}
		if baseRevision >= 0 && pathRev != baseRevision {
			return conflict(*path, baseRevision, pathRev)
		}
		out.Path, out.Content, out.Revision = *path, *content, global+1
		added := 1
		var terms []string
		var ranks []int32
		switch {
		case oldID == nil:
			terms, ranks = postings(out.Content)
		case *oldID != sourceID:
			// The replaced page's postings, found again from its text.
			oldTerms, _ := postings(*oldContent)
			if _, err := tx.Exec(ctx, `DELETE FROM memory_terms WHERE layer = 0 AND id = $1 AND term = ANY($2)`,
				*oldID, oldTerms); err != nil {
				return err
			}
			terms, ranks = postings(out.Content)
			added = 0
		default: // the same source promoted again keeps its postings
			added = 0
		}
		return tx.QueryRow(ctx, `WITH t AS (
				INSERT INTO memory_trusted AS t (path, content, revision, source_id, updated_at)
				VALUES ($1, $2, $3, $4, now())
				ON CONFLICT (path) DO UPDATE SET content = EXCLUDED.content, revision = EXCLUDED.revision,
					source_id = EXCLUDED.source_id, updated_at = EXCLUDED.updated_at
				RETURNING updated_at
			), p AS (
				UPDATE memory_paths SET revision = $3, updated_at = now() WHERE path = $1
			), st AS (
				UPDATE memory_state SET revision = $3, trusted_pages = trusted_pages + $5
			), terms AS (
				INSERT INTO memory_terms (layer, term, rank, id)
				SELECT 0, u.term, u.rank, $4 FROM unnest($6::text[], $7::int4[]) AS u(term, rank)
			)
			SELECT updated_at FROM t`, out.Path, out.Content, out.Revision, sourceID, added, terms, ranks).Scan(&out.UpdatedAt)
	})
	if err != nil {
		return sessions.TrustedPage{}, fmt.Errorf("promote memory source %d: %w", sourceID, err)
	}
	return out, nil
}

// likePrefix returns a LIKE pattern matching the strings that start with
// prefix (used with ESCAPE '\').
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// postings returns the search postings of a document's text (package
// fulltext) as the two arrays an unnest of them inserts.
func postings(content string) ([]string, []int32) {
	ps := fulltext.Index(content)
	terms, ranks := make([]string, len(ps)), make([]int32, len(ps))
	for i, p := range ps {
		terms[i], ranks[i] = p.Term, p.Rank
	}
	return terms, ranks
}

// SearchMemory ranks the sources and trusted pages under pathPrefix that
// match query, best first, and returns at most topK hits, with package
// fulltext over the memory_terms postings, read in one read-only
// repeatable-read transaction.
func (s *Store) SearchMemory(ctx context.Context, query string, topK int, pathPrefix string) ([]sessions.MemoryHit, error) {
	if sessions.HasNUL(pathPrefix) {
		return nil, nil
	}
	var out []sessions.MemoryHit
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		var err error
		out, err = fulltext.Search(ctx, query, topK, postingReader{tx: tx, like: likePrefix(pathPrefix)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	return out, nil
}

// postingReader reads memory_terms and the documents for fulltext.Search
// within tx, keeping the documents whose path is LIKE like ("%": all).
type postingReader struct {
	tx   pgx.Tx
	like string
}

// Postings implements [fulltext.Reader]: one statement for all requests,
// a UNION ALL of one range scan of the primary key each (index-only once
// vacuumed), joined with the documents only to apply a path prefix.
func (r postingReader) Postings(ctx context.Context, layer int, reqs []fulltext.Request) ([][]fulltext.Entry, error) {
	join, filter := "", ""
	args := []any{layer}
	if r.like != "%" {
		table, id := fulltext.DocTable(layer)
		join = ` JOIN ` + table + ` d ON d.` + id + ` = p.id`
		filter = ` AND d.path LIKE $2 ESCAPE '\'`
		args = append(args, r.like)
	}
	var q strings.Builder
	for i, req := range reqs {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		n := len(args)
		fmt.Fprintf(&q, `(SELECT %d AS req, p.rank, p.id FROM memory_terms p%s
			WHERE p.layer = $1 AND p.term = $%d AND (p.rank, p.id) > ($%d, $%d)%s ORDER BY p.rank, p.id LIMIT $%d)`,
			i, join, n+1, n+2, n+3, filter, n+4)
		args = append(args, req.Term, req.After.Rank, req.After.ID, req.N)
	}
	// The order of a UNION ALL's rows is the plan's: say it.
	rows, err := r.tx.Query(ctx, "SELECT req, rank, id FROM ("+q.String()+") u ORDER BY req, rank, id", args...)
	if err != nil {
		return nil, err
	}
	out := make([][]fulltext.Entry, len(reqs))
	var i int
	var e fulltext.Entry
	_, err = pgx.ForEachRow(rows, []any{&i, &e.Rank, &e.ID}, func() error {
		out[i] = append(out[i], e)
		return nil
	})
	return out, err
}

// Documents implements [fulltext.Reader].
func (r postingReader) Documents(ctx context.Context, layer int, ids []int64) ([]fulltext.Document, error) {
	table, id := fulltext.DocTable(layer)
	rows, err := r.tx.Query(ctx, `SELECT `+id+`, path, content FROM `+table+`
		WHERE `+id+` = ANY($1) AND path LIKE $2 ESCAPE '\'`, ids, r.like)
	if err != nil {
		return nil, err
	}
	var d fulltext.Document
	var out []fulltext.Document
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.Path, &d.Content}, func() error {
		out = append(out, d)
		return nil
	})
	return out, err
}

// ReindexMemory rewrites the memory search index from the stored sources
// and trusted pages, in one transaction that holds the memory write lock:
// for rows loaded around the store (a bulk import with plain SQL or COPY),
// or to repair the index. It locks memory_terms against searches until it
// commits (seconds for 100,000 sources).
func (s *Store) ReindexMemory(ctx context.Context) error {
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		for _, q := range []string{
			"SELECT 1 FROM memory_state FOR UPDATE",
			"TRUNCATE memory_terms",
			"ALTER TABLE memory_terms DROP CONSTRAINT memory_terms_pkey",
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return indexMemory(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("reindex memory: %w", err)
	}
	return nil
}

// indexMemory writes the postings of every stored source and trusted page
// with COPY and then builds memory_terms' primary key: the Go half of
// migration 3, in its transaction.
func indexMemory(ctx context.Context, tx pgx.Tx) error {
	for _, layer := range []int16{fulltext.LayerSource, fulltext.LayerTrusted} {
		table, idCol := fulltext.DocTable(int(layer))
		query := `SELECT ` + idCol + `, content FROM ` + table + ` WHERE ` + idCol + ` > $1 ORDER BY ` + idCol + ` LIMIT 1000`
		for after := int64(-1); ; {
			rows, err := tx.Query(ctx, query, after)
			if err != nil {
				return fmt.Errorf("index memory: %w", err)
			}
			var batch [][]any
			var id int64
			var content string
			docs := 0
			_, err = pgx.ForEachRow(rows, []any{&id, &content}, func() error {
				docs++
				after = id
				for _, p := range fulltext.Index(content) {
					batch = append(batch, []any{layer, p.Term, p.Rank, id})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("index memory: %w", err)
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"memory_terms"}, []string{"layer", "term", "rank", "id"},
				pgx.CopyFromRows(batch)); err != nil {
				return fmt.Errorf("index memory: write postings: %w", err)
			}
			if docs < 1000 {
				break
			}
		}
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE memory_terms ADD CONSTRAINT memory_terms_pkey PRIMARY KEY (layer, term, rank, id)`); err != nil {
		return fmt.Errorf("index memory: build the index: %w", err)
	}
	return nil
}

// GrepMemory returns the lines containing substring under pathPrefix, in
// path order with the trusted layer before the sources of a path (sources
// oldest first), at most limit hits (0 or less: no limit). The database
// narrows the documents with strpos; package grep picks the lines, as in
// every backend.
func (s *Store) GrepMemory(ctx context.Context, substring, pathPrefix string, caseSensitive bool, limit int) ([]sessions.MemoryHit, error) {
	if sessions.HasNUL(substring, pathPrefix) {
		return nil, nil
	}
	if substring == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = math.MaxInt
	}
	// The database narrows the documents; Go decides. PostgreSQL's lower()
	// depends on the database locale, so case-insensitive narrowing is
	// only trusted for ASCII needles.
	filter, needle := "strpos(content, $2) > 0", substring
	if !caseSensitive {
		filter, needle = "strpos(lower(content), $2) > 0", strings.ToLower(substring)
		if !grep.ASCII(substring) {
			filter = "$2::text IS NOT NULL"
		}
	}
	m := grep.New(substring, caseSensitive)
	var out []sessions.MemoryHit
	// A cursor lets the scan stop once limit lines are found: the plan
	// can stream in path order from the path indexes, and closing plain
	// result rows early would read them all anyway.
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		out = out[:0]
		if _, err := tx.Exec(ctx, `DECLARE grep_cursor NO SCROLL CURSOR FOR
			SELECT layer, path, source_id, content FROM (
				SELECT 0 AS ord, 'trusted' AS layer, path, source_id, content FROM memory_trusted
				WHERE path LIKE $1 ESCAPE '\' AND `+filter+`
				UNION ALL
				SELECT 1, 'source', path, id, content FROM memory_sources
				WHERE path LIKE $1 ESCAPE '\' AND `+filter+`
			) h ORDER BY path, ord, source_id`, likePrefix(pathPrefix), needle); err != nil {
			return err
		}
		for {
			rows, err := tx.Query(ctx, "FETCH 64 FROM grep_cursor")
			if err != nil {
				return err
			}
			var (
				layer, path, content string
				id                   int64
				fetched              int
			)
			_, err = pgx.ForEachRow(rows, []any{&layer, &path, &id, &content}, func() error {
				fetched++
				if len(out) < limit {
					m.Lines(content, func(line int, snippet string) bool {
						out = append(out, sessions.MemoryHit{Layer: layer, Path: path, SourceID: id, Snippet: snippet, Line: line})
						return len(out) < limit
					})
				}
				return nil
			})
			if err != nil || fetched < 64 || len(out) >= limit {
				return err
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("grep memory for %q: %w", substring, err)
	}
	return out, nil
}

const sourceColumns = `id, path, content, speaker_kind, speaker_id, speaker_display, principal_id,
	authority_tier, interaction, source, revision, created_at`

func scanSource(row pgx.Row) (sessions.Source, error) {
	var src sessions.Source
	a := &src.Authority
	err := row.Scan(&src.ID, &src.Path, &src.Content, &a.SpeakerKind, &a.SpeakerID, &a.SpeakerDisplay,
		&a.PrincipalID, &a.Tier, &a.Interaction, &a.Source, &src.Revision, &src.CreatedAt)
	return src, err
}

// GetMemory returns the trusted page and the sources (oldest first) at
// path with the path's revision, read from one snapshot, or ErrNotFound.
func (s *Store) GetMemory(ctx context.Context, path string) (sessions.MemoryPage, error) {
	if sessions.HasNUL(path) {
		return sessions.MemoryPage{}, fmt.Errorf("memory path: %w", sessions.ErrNotFound)
	}
	page := sessions.MemoryPage{Path: path}
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		page.Trusted, page.Sources = nil, nil
		if err := tx.QueryRow(ctx, "SELECT revision FROM memory_paths WHERE path = $1", path).Scan(&page.Revision); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return sessions.ErrNotFound
			}
			return err
		}
		var t sessions.TrustedPage
		err := tx.QueryRow(ctx, "SELECT path, content, revision, source_id, updated_at FROM memory_trusted WHERE path = $1", path).
			Scan(&t.Path, &t.Content, &t.Revision, &t.SourceID, &t.UpdatedAt)
		switch {
		case err == nil:
			page.Trusted = &t
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+sourceColumns+" FROM memory_sources WHERE path = $1 ORDER BY id", path)
		if err != nil {
			return err
		}
		page.Sources, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.Source, error) { return scanSource(r) })
		return err
	})
	if err != nil {
		return sessions.MemoryPage{}, fmt.Errorf("get memory %q: %w", path, err)
	}
	return page, nil
}

// BrowseMemory lists the paths that start with prefix, in path order.
func (s *Store) BrowseMemory(ctx context.Context, prefix string) ([]sessions.MemoryEntry, error) {
	if sessions.HasNUL(prefix) {
		return nil, nil
	}
	out, err := queryAll(ctx, s, func(r pgx.Row) (e sessions.MemoryEntry, err error) {
		return e, r.Scan(&e.Path, &e.Sources, &e.Trusted, &e.Revision, &e.UpdatedAt)
	}, `SELECT p.path, p.sources, t.path IS NOT NULL, p.revision, p.updated_at
		FROM memory_paths p LEFT JOIN memory_trusted t ON t.path = p.path
		WHERE p.path LIKE $1 ESCAPE '\' ORDER BY p.path`, likePrefix(prefix))
	if err != nil {
		return nil, fmt.Errorf("browse memory under %q: %w", prefix, err)
	}
	return out, nil
}
