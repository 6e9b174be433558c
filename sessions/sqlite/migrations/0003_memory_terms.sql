-- Version 3: memory search on an impact-ordered index. FTS5 found the
-- matches of a word but had to score every one of them (bm25) to rank
-- them; memory_terms keeps, for each layer and term, the postings in
-- (rank, id) order, where rank is the negated impact of the term on the
-- document (package fulltext computes both, the same for every backend),
-- so a search reads the best postings first and stops early. The postings
-- of the rows already stored are written in Go, in this migration's
-- transaction, right after this file.
DROP TRIGGER memory_sources_fts_insert;
DROP TRIGGER memory_sources_fts_delete;
DROP TRIGGER memory_trusted_fts_insert;
DROP TRIGGER memory_trusted_fts_delete;
DROP TRIGGER memory_trusted_fts_update;
DROP TABLE memory_sources_fts;
DROP TABLE memory_trusted_fts;

-- layer: 0 trusted pages, 1 sources. id: the source id (for a trusted
-- page, the source it was promoted from, which orders equal scores).
CREATE TABLE memory_terms (
    layer INTEGER NOT NULL,
    term  TEXT    NOT NULL,
    rank  INTEGER NOT NULL,
    id    INTEGER NOT NULL,
    PRIMARY KEY (layer, term, rank, id)
) WITHOUT ROWID;

-- A trusted page's postings join it by the source it was promoted from.
CREATE INDEX memory_trusted_source ON memory_trusted (source_id);
