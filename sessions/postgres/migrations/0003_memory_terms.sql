-- Version 3: memory search on an impact-ordered index. The GIN indexes on
-- the tsvector columns found the matches of a word, but ts_rank had to
-- score every one of them to order them; memory_terms keeps, for each
-- layer and term, the postings in (rank, id) order, where rank is the
-- negated impact of the term on the document (package fulltext computes
-- both, the same for every backend), so a search reads the best postings
-- first and stops early. The postings of the rows already stored are
-- written in Go, in this migration's transaction, right after this file.
ALTER TABLE memory_sources DROP COLUMN search;
ALTER TABLE memory_trusted DROP COLUMN search;

-- layer: 0 trusted pages, 1 sources. id: the source id (for a trusted
-- page, the source it was promoted from, which orders equal scores).
-- The primary key (layer, term, rank, id), which searches read in order,
-- is added by the Go half once the postings are in: one sorted build
-- rather than an insert per posting.
CREATE TABLE memory_terms (
    layer smallint NOT NULL,
    term  text COLLATE "C" NOT NULL,
    rank  integer NOT NULL,
    id    bigint NOT NULL
);

-- A trusted page's postings join it by the source it was promoted from.
CREATE INDEX memory_trusted_source_idx ON memory_trusted (source_id);
