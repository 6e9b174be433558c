package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

var upgradeAuthority = sessions.SourceAuthority{SpeakerKind: "owner", SpeakerID: "o", SpeakerDisplay: "Owner",
	PrincipalID: "p", Tier: "owner", Interaction: "interactive", Source: "cli"}

// TestMigration3IndexesStoredMemory opens a schema written at version 2
// (tsvector search) and checks that the upgrade writes the search
// postings of what was stored (storetest.CheckUpgradedMemory).
func TestMigration3IndexesStoredMemory(t *testing.T) {
	old := newTestDB(t)
	old.exec(t, `CREATE TABLE openprogram_schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	for i, name := range []string{"0001_init", "0002_audit_key"} {
		body, err := os.ReadFile("migrations/" + name + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		old.exec(t, string(body))
		old.exec(t, `INSERT INTO openprogram_schema_migrations (version, name) VALUES ($1, $2)`, i+1, name)
	}
	for i, d := range storetest.UpgradeSources {
		old.exec(t, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display, principal_id,
			authority_tier, interaction, source, revision, created_at)
			VALUES ($1, $2, 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', $3, now())`, d[0], d[1], i+1)
	}
	old.exec(t, `INSERT INTO memory_trusted (path, content, revision, source_id, updated_at) VALUES ($1, $2, 4, 1, now())`,
		storetest.UpgradeSources[0][0], storetest.UpgradeSources[0][1])
	old.exec(t, `UPDATE memory_state SET revision = 4, sources = 3, trusted_pages = 1`)

	storetest.CheckUpgradedMemory(t, openStore(t, old), openStore(t, newTestDB(t)))
}

// TestReindexMemory: rows written around the store are found once
// ReindexMemory has run, and reindexing an indexed store changes nothing.
func TestReindexMemory(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	st := openStore(t, db)
	if _, err := st.AppendSource(ctx, sessions.NewSource{Path: "notes/x", Content: "zebra crossing", Authority: upgradeAuthority}, -1); err != nil {
		t.Fatal(err)
	}
	db.exec(t, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display, principal_id,
		authority_tier, interaction, source, revision, created_at)
		VALUES ('notes/y', 'a zebra herd', 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', 2, now())`)
	before, err := st.SearchMemory(ctx, "zebra", 10, "")
	if err != nil || len(before) != 1 {
		t.Fatalf("SearchMemory before the reindex = %+v, %v; want only the appended source", before, err)
	}
	for range 2 {
		if err := st.ReindexMemory(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := st.SearchMemory(ctx, "zebra", 10, "")
		if err != nil || len(got) != 2 {
			t.Errorf("SearchMemory after ReindexMemory = %+v, %v; want both sources once", got, err)
		}
	}
}
