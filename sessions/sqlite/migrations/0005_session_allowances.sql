-- Version 5: standing approvals. The owner's "allow for this session" in
-- `openprogram chat` is kept here, per session, so it survives a restart
-- of chat and applies to `openprogram prompt --session` too. Only the
-- owner's speaker reads or writes it; it goes with its session.
-- granted_by is the granting speaker's authority (sessions.SourceAuthority
-- as JSON).
CREATE TABLE session_allowances (
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool       TEXT    NOT NULL,
    granted_by TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool)
) WITHOUT ROWID;
