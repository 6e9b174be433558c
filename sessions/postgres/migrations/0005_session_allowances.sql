-- Version 5: standing approvals. The owner's "allow for this session" in
-- `openprogram chat` is kept here, per session, so it survives a restart
-- of chat and applies to `openprogram prompt --session` too. Only the
-- owner's speaker reads or writes it; it goes with its session.
-- granted_by is the granting speaker's authority (sessions.SourceAuthority).
CREATE TABLE session_allowances (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool       text COLLATE "C" NOT NULL,
    granted_by jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, tool)
);
