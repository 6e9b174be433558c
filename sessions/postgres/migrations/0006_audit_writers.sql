-- Version 6: one audit chain per writer. A store opened to write with a
-- signing key appends to a chain of its own (writer_id, seq 1, 2, ...),
-- each record's hash signed with the writer's Ed25519 key (sig), so that
-- appends of one writer never wait on another's (no audit_head lock) and
-- no host holds a secret that forges another's records. Ids now come from
-- a sequence and order the records of all writers. audit_keys records each
-- writer key (its id is derived from the key); audit_writers holds each
-- writer's signed head and what it started after. The chain written before
-- stays (writer_id ''), verified with its audit key; the store that
-- migrates a keyed one appends its last record, audit.writers, in this
-- transaction.
ALTER TABLE audit_records
    ADD COLUMN writer_id text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN sig text NOT NULL DEFAULT '';
CREATE SEQUENCE audit_records_id_seq OWNED BY audit_records.id;
SELECT setval('audit_records_id_seq', COALESCE((SELECT max(id) FROM audit_records), 0) + 1, false);
ALTER TABLE audit_records ALTER COLUMN id SET DEFAULT nextval('audit_records_id_seq');
CREATE UNIQUE INDEX audit_records_writer_seq ON audit_records (writer_id, seq) WHERE writer_id <> '';

CREATE TABLE audit_keys (
    key_id     text COLLATE "C" PRIMARY KEY,
    public_key text NOT NULL,
    label      text NOT NULL,
    added_at   timestamptz NOT NULL,
    revoked_at timestamptz
);

CREATE TABLE audit_writers (
    writer_id   text COLLATE "C" PRIMARY KEY,
    key_id      text NOT NULL,
    base_id     bigint NOT NULL,
    base_hash   text NOT NULL,
    anchor_id   bigint NOT NULL,
    anchor_hash text NOT NULL,
    last_seq    bigint NOT NULL,
    last_hash   text NOT NULL,
    head_sig    text NOT NULL,
    started_at  timestamptz NOT NULL
);
