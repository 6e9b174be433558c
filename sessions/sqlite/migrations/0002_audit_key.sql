-- Version 2: the keyed audit chain. audit_log.hash now holds each record's
-- HMAC-SHA-256 under a key kept outside the database; audit_head names
-- the key (key_id, derived from it, '' while the log is unkeyed) and seals
-- the head with a MAC, so moving the head back needs the key. The re-key
-- of a version 1 log happens in Go, where the key is, when openprogram
-- first opens the store with a newly created key.
ALTER TABLE audit_head ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_head ADD COLUMN head_mac TEXT NOT NULL DEFAULT '';

-- Append-only in the database too, as in the PostgreSQL backend: the MACs
-- detect tampering, the triggers stop the accidental kind. (A DELETE
-- without WHERE runs the trigger too: SQLite's truncate shortcut is off
-- for tables with DELETE triggers.)
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only (UPDATE refused)');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only (DELETE refused)');
END;
