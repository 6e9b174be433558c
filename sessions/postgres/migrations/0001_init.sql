-- Version 1: sessions, the message tree, turn leases, two-layer memory and
-- the audit hash chain. Tables are created in the first schema of the
-- connection's search_path. Text that is sorted or prefix-matched uses the
-- "C" collation so ordering is bytewise (as in the SQLite backend) and
-- LIKE 'prefix%' can use the b-tree indexes.

CREATE TABLE sessions (
    id         text COLLATE "C" PRIMARY KEY,
    agent_id   text NOT NULL,
    title      text NOT NULL,
    source     text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    head_id    text COLLATE "C",
    archived   boolean NOT NULL DEFAULT false
);

-- ListSessions reads this index in order and stops after limit rows, so its
-- cost does not grow with the number of sessions.
CREATE INDEX sessions_list_idx ON sessions (updated_at DESC, id DESC) WHERE NOT archived;

CREATE TABLE messages (
    id         text COLLATE "C" PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL,
    parent_id  text COLLATE "C",
    role       text NOT NULL,
    content    text NOT NULL,
    created_at timestamptz NOT NULL,
    metadata   text,
    CONSTRAINT messages_role_check CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    CONSTRAINT messages_id_session_key UNIQUE (id, session_id),
    CONSTRAINT messages_session_fkey FOREIGN KEY (session_id)
        REFERENCES sessions (id) ON DELETE CASCADE,
    -- A parent must exist and belong to the same session.
    CONSTRAINT messages_parent_fkey FOREIGN KEY (parent_id, session_id)
        REFERENCES messages (id, session_id) ON DELETE CASCADE
);

CREATE INDEX messages_session_idx ON messages (session_id);

-- The head must be a message of the session itself.
ALTER TABLE sessions ADD CONSTRAINT sessions_head_fkey FOREIGN KEY (head_id, id)
    REFERENCES messages (id, session_id);

-- One row per leased session. Expiry is judged by the database clock, so
-- processes on different machines agree on it. No foreign key: a turn may
-- reserve a session id before it creates the session; DeleteSession drops
-- the lease itself.
CREATE TABLE turn_leases (
    session_id text COLLATE "C" PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- The single row that serialises memory writes and holds the global
-- revision and the counters MemoryStatus reports.
CREATE TABLE memory_state (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    revision      bigint NOT NULL,
    sources       bigint NOT NULL,
    trusted_pages bigint NOT NULL
);
INSERT INTO memory_state (singleton, revision, sources, trusted_pages) VALUES (true, 0, 0, 0);

-- One row per path: its revision (the global revision of its last write)
-- and what BrowseMemory lists.
CREATE TABLE memory_paths (
    path       text COLLATE "C" PRIMARY KEY,
    revision   bigint NOT NULL,
    sources    bigint NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Layer one: append-only sources with the speaker's authority.
CREATE TABLE memory_sources (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path            text COLLATE "C" NOT NULL,
    content         text NOT NULL,
    speaker_kind    text NOT NULL,
    speaker_id      text NOT NULL,
    speaker_display text NOT NULL,
    principal_id    text NOT NULL,
    authority_tier  text NOT NULL,
    interaction     text NOT NULL,
    source          text NOT NULL,
    revision        bigint NOT NULL,
    created_at      timestamptz NOT NULL,
    search          tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
);

CREATE INDEX memory_sources_path_idx ON memory_sources (path, id);
-- fastupdate off: appends are rare next to searches, and a pending list
-- would make every search scan it until the next vacuum.
CREATE INDEX memory_sources_search_idx ON memory_sources USING gin (search) WITH (fastupdate = off);

-- Layer two: the owner-promoted page at a path.
CREATE TABLE memory_trusted (
    path       text COLLATE "C" PRIMARY KEY,
    content    text NOT NULL,
    revision   bigint NOT NULL,
    source_id  bigint NOT NULL REFERENCES memory_sources (id),
    updated_at timestamptz NOT NULL,
    search     tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
);

CREATE INDEX memory_trusted_search_idx ON memory_trusted USING gin (search) WITH (fastupdate = off);

-- The audit log. Every record's hash covers the previous record's hash and
-- its own content; audit_head holds the chain's end, and appenders lock
-- that row so the chain stays linear across processes.
CREATE TABLE audit_records (
    id         bigint PRIMARY KEY,
    ts         timestamptz NOT NULL,
    type       text NOT NULL,
    origin     text NOT NULL,
    session_id text NOT NULL,
    payload    text NOT NULL,
    prev_hash  text NOT NULL,
    hash       text NOT NULL
);

CREATE TABLE audit_head (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_id   bigint NOT NULL,
    last_hash text NOT NULL
);
INSERT INTO audit_head (singleton, last_id, last_hash) VALUES (true, 0, '');

-- Append-only in the database too: the hash chain detects tampering, the
-- triggers stop the accidental kind.
CREATE FUNCTION audit_records_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit records are append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_records_no_update_delete BEFORE UPDATE OR DELETE ON audit_records
    FOR EACH ROW EXECUTE FUNCTION audit_records_append_only();
CREATE TRIGGER audit_records_no_truncate BEFORE TRUNCATE ON audit_records
    FOR EACH STATEMENT EXECUTE FUNCTION audit_records_append_only();
