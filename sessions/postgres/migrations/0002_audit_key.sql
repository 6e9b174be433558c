-- Version 2: the keyed audit chain. audit_records.hash now holds each
-- record's HMAC-SHA-256 under a key kept outside the database; audit_head
-- names the key (key_id, derived from it, '' while the log is unkeyed) and
-- seals the head with a MAC, so moving the head back needs the key. The
-- re-key of a version 1 log happens in Go, where the key is, when
-- openprogram first opens the store with a newly created key.
ALTER TABLE audit_head ADD COLUMN key_id text NOT NULL DEFAULT '';
ALTER TABLE audit_head ADD COLUMN head_mac text NOT NULL DEFAULT '';
