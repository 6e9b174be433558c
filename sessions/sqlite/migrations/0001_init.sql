-- OpenProgram sessions store, SQLite schema version 1.
-- Times are INTEGER Unix microseconds (UTC).

CREATE TABLE sessions (
    id         TEXT    PRIMARY KEY,
    agent_id   TEXT    NOT NULL DEFAULT '',
    title      TEXT    NOT NULL DEFAULT '',
    source     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    head_id    TEXT,
    archived   INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    -- The head is a message of this very session; checked at commit so a
    -- turn can insert its messages and move the head in one transaction.
    FOREIGN KEY (id, head_id) REFERENCES messages (session_id, id) DEFERRABLE INITIALLY DEFERRED
);

-- ListSessions: a covering index scan that stops after LIMIT rows, whatever
-- the table size, without touching the table. A turn changes updated_at, so
-- it rewrites this entry anyway: carrying head_id and the rest costs nothing more.
CREATE INDEX sessions_list ON sessions (updated_at DESC, id DESC, agent_id, title, source, created_at, head_id)
    WHERE archived = 0;

CREATE TABLE messages (
    -- seq is the row's integer key (an explicit INTEGER PRIMARY KEY
    -- survives VACUUM). A run is a chain of messages with consecutive seqs,
    -- each the parent of the next, as one AppendMessages call (or a single
    -- busy session) writes them; run_start is the first seq of the run the
    -- row ends, run_parent the parent_seq of that first message. Branch
    -- walks from run to run (one lookup each) and reads each run as one
    -- range of keys.
    seq        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    parent_id  TEXT,
    parent_seq INTEGER,
    run_start  INTEGER NOT NULL,
    run_parent INTEGER,
    role       TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    metadata   TEXT,
    CHECK ((parent_id IS NULL) = (parent_seq IS NULL)),
    CHECK (run_start = seq OR (run_start < seq AND parent_seq = seq - 1)),
    CHECK (run_start < seq OR run_parent IS parent_seq),
    UNIQUE (session_id, id),
    -- A parent is a message of the same session.
    FOREIGN KEY (session_id, parent_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);

-- Foreign-key checks and cascades look children up by parent.
CREATE INDEX messages_parent ON messages (parent_id);

CREATE TABLE turn_leases (
    session_id TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row: the global memory revision and the layer counts.
CREATE TABLE memory_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL,
    sources  INTEGER NOT NULL,
    trusted  INTEGER NOT NULL
);
INSERT INTO memory_state (id, revision, sources, trusted) VALUES (1, 0, 0, 0);

CREATE TABLE memory_sources (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    path            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    speaker_kind    TEXT    NOT NULL,
    speaker_id      TEXT    NOT NULL,
    speaker_display TEXT    NOT NULL,
    principal_id    TEXT    NOT NULL,
    authority_tier  TEXT    NOT NULL,
    interaction     TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    revision        INTEGER NOT NULL,
    created_at      INTEGER NOT NULL
);
CREATE INDEX memory_sources_path ON memory_sources (path, revision);

-- Sources are immutable.
CREATE TRIGGER memory_sources_immutable BEFORE UPDATE ON memory_sources
BEGIN
    SELECT RAISE(ABORT, 'memory sources are immutable');
END;

CREATE TABLE memory_trusted (
    id         INTEGER PRIMARY KEY,
    path       TEXT    NOT NULL UNIQUE,
    content    TEXT    NOT NULL,
    revision   INTEGER NOT NULL,
    source_id  INTEGER NOT NULL REFERENCES memory_sources (id),
    updated_at INTEGER NOT NULL
);

-- Full-text indexes over both layers (external content: the text is stored once).
CREATE VIRTUAL TABLE memory_sources_fts USING fts5 (
    content, content = 'memory_sources', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memory_sources_fts_insert AFTER INSERT ON memory_sources
BEGIN
    INSERT INTO memory_sources_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memory_sources_fts_delete AFTER DELETE ON memory_sources
BEGIN
    INSERT INTO memory_sources_fts (memory_sources_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;

CREATE VIRTUAL TABLE memory_trusted_fts USING fts5 (
    content, content = 'memory_trusted', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memory_trusted_fts_insert AFTER INSERT ON memory_trusted
BEGIN
    INSERT INTO memory_trusted_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memory_trusted_fts_delete AFTER DELETE ON memory_trusted
BEGIN
    INSERT INTO memory_trusted_fts (memory_trusted_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER memory_trusted_fts_update AFTER UPDATE ON memory_trusted
BEGIN
    INSERT INTO memory_trusted_fts (memory_trusted_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO memory_trusted_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY,
    ts         INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    origin     TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL
);

-- The chain head, updated in the same transaction as each append, so
-- deleting the newest records is detected too.
CREATE TABLE audit_head (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    last_id   INTEGER NOT NULL,
    last_hash TEXT    NOT NULL
);
INSERT INTO audit_head (id, last_id, last_hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
