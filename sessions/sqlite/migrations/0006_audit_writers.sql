-- Version 6: one audit chain per writer. A store opened to write with a
-- signing key appends to a chain of its own (writer_id, seq 1, 2, ...),
-- each record's hash signed with the writer's Ed25519 key (sig), so that
-- appends of one writer never wait on another's and no host holds a
-- secret that forges another's records. audit_keys records each writer
-- key (its id is derived from the key); audit_writers holds each writer's
-- signed head and what it started after. The chain written before stays
-- (writer_id ''), verified with its audit key; the store that migrates a
-- keyed one appends its last record, audit.writers, in this transaction.
ALTER TABLE audit_log ADD COLUMN writer_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN sig TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX audit_log_writer_seq ON audit_log (writer_id, seq) WHERE writer_id <> '';

CREATE TABLE audit_keys (
    key_id     TEXT PRIMARY KEY,
    public_key TEXT    NOT NULL,
    label      TEXT    NOT NULL,
    added_at   INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE audit_writers (
    writer_id   TEXT PRIMARY KEY,
    key_id      TEXT    NOT NULL,
    base_id     INTEGER NOT NULL,
    base_hash   TEXT    NOT NULL,
    anchor_id   INTEGER NOT NULL,
    anchor_hash TEXT    NOT NULL,
    last_seq    INTEGER NOT NULL,
    last_hash   TEXT    NOT NULL,
    head_sig    TEXT    NOT NULL,
    started_at  INTEGER NOT NULL
);
