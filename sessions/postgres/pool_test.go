package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// A plain URL gets the pool defaults for many processes; the URL's own
// pgx parameters win over them.
func TestPoolDefaults(t *testing.T) {
	db := newTestDB(t)
	cfg := postgres.PoolConfig(openStore(t, db))
	if cfg.MaxConns != postgres.DefaultMaxConns || cfg.MinConns != 0 ||
		cfg.MaxConnIdleTime != postgres.DefaultMaxConnIdleTime || cfg.HealthCheckPeriod != postgres.DefaultHealthCheckPeriod ||
		cfg.ConnConfig.DefaultQueryExecMode != postgres.DefaultQueryExecMode {
		t.Errorf("pool of a plain URL: max %d min %d idle %v health %v mode %v; want %d 0 %v %v %v",
			cfg.MaxConns, cfg.MinConns, cfg.MaxConnIdleTime, cfg.HealthCheckPeriod, cfg.ConnConfig.DefaultQueryExecMode,
			postgres.DefaultMaxConns, postgres.DefaultMaxConnIdleTime, postgres.DefaultHealthCheckPeriod, postgres.DefaultQueryExecMode)
	}

	u := pgtest.WithParams(db.URL, map[string]string{"pool_max_conns": "7", "pool_max_conn_idle_time": "3m",
		"pool_health_check_period": "2m", "default_query_exec_mode": "exec"})
	st, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg = postgres.PoolConfig(st)
	if cfg.MaxConns != 7 || cfg.MaxConnIdleTime != 3*time.Minute || cfg.HealthCheckPeriod != 2*time.Minute ||
		cfg.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeExec {
		t.Errorf("pool of a URL with pgx parameters: max %d idle %v health %v mode %v; want 7 3m 2m exec",
			cfg.MaxConns, cfg.MaxConnIdleTime, cfg.HealthCheckPeriod, cfg.ConnConfig.DefaultQueryExecMode)
	}
}

// An idle store ends up holding no connection at all.
func TestIdlePoolHoldsNoConnection(t *testing.T) {
	db := newTestDB(t)
	db.URL = pgtest.WithParams(db.URL, map[string]string{"pool_max_conn_idle_time": "100ms", "pool_health_check_period": "100ms"})
	st := openStore(t, db)
	ctx := t.Context()
	fillPool(t, st)
	held := -1
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		n, err := pgtest.Connections(ctx, db.base, "application_name = $1", db.AppName)
		if err != nil {
			t.Fatal(err)
		}
		if held = n; held == 0 {
			return
		}
	}
	t.Errorf("an idle store still holds %d connections after 15s", held)
}

// A server with no connection slot left (here a role's CONNECTION LIMIT,
// which fails like max_connections with SQLSTATE 53300) makes calls wait
// and retry, Open included, rather than fail; past the bounded wait a call
// fails with an error naming the saturation, and writes nothing.
func TestSaturatedServerIsWaitedOut(t *testing.T) {
	base := baseURL(t)
	roleURL := pgtest.Role(t, base, "op_test_sat", 1)
	ctx := t.Context()
	// block takes the role's only slot, once the backends that held it
	// are gone (closing a connection does not wait for its backend).
	block := func() *pgx.Conn {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			c, err := pgx.Connect(ctx, roleURL)
			if err == nil {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("take the role's only connection slot: %v", err)
			}
		}
	}

	blocker := block()
	release := time.AfterFunc(500*time.Millisecond, func() { blocker.Close(context.Background()) })
	defer release.Stop()
	start := time.Now()
	st, err := postgres.Open(ctx, roleURL)
	if err != nil {
		t.Fatalf("Open while the server has no slot for 500ms: %v, want it to wait and succeed", err)
	}
	defer st.Close()
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("Open returned after %v, before the slot was free", d)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "first"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}

	postgres.ResetPool(st)
	blocker = block()
	postgres.SetAcquireWait(t, st, 300*time.Millisecond)
	_, err = st.CreateSession(ctx, sessions.Session{ID: "second"})
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "53300" || !strings.Contains(err.Error(), "no connection slot left") ||
		!strings.Contains(err.Error(), "max_connections") || !strings.Contains(err.Error(), "PgBouncer") {
		t.Fatalf("CreateSession on a saturated server past the wait = %v, want the 53300 error explained, with the pool advice", err)
	}
	blocker.Close(ctx)
	got, err := st.ListSessions(ctx, 10)
	if err != nil || len(got) != 1 || got[0].ID != "first" {
		t.Errorf("ListSessions after the failed call = %v, %v; want only the first session", got, err)
	}
}

// Behind PgBouncer in transaction pooling, with a plain URL, many stores
// sharing one server connection work: every kind of call, from several
// stores at once.
func TestThroughPgBouncer(t *testing.T) {
	base := baseURL(t)
	roleURL := pgtest.Role(t, base, "op_test_bouncer", -1)
	u, err := pgconn.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	bouncer := pgtest.PgBouncer(t, base, &pgtest.BouncerOptions{PoolSize: 1, Users: []string{u.User}})
	bouncedURL := pgtest.WithUser(bouncer.URL, u.User)
	ctx := t.Context()
	var stores []*postgres.Store
	for range 3 {
		st, err := postgres.OpenWith(ctx, bouncedURL, &sessions.Options{AuditKey: storetest.Key})
		if err != nil {
			t.Fatalf("Open through PgBouncer: %v\npgbouncer:\n%s", err, bouncer.Log())
		}
		defer st.Close()
		stores = append(stores, st)
	}
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			if err := exercise(ctx, st, string(rune('a'+i))); err != nil {
				t.Errorf("store %d through PgBouncer: %v", i, err)
			}
		})
	}
	wg.Wait()
}

// exercise makes every kind of store call, several times.
func exercise(ctx context.Context, st *postgres.Store, name string) error {
	for i := range 5 {
		id := name + "-" + string(rune('0'+i))
		if _, err := st.CreateSession(ctx, sessions.Session{ID: id}); err != nil {
			return err
		}
		if err := st.AcquireTurn(ctx, id, name, time.Minute); err != nil {
			return err
		}
		if err := st.RenewTurn(ctx, id, name, time.Minute); err != nil {
			return err
		}
		if _, err := st.AppendMessages(ctx, id, "", []sessions.NewMessage{{Role: sessions.RoleUser, Content: "hello"}}, true); err != nil {
			return err
		}
		if b, err := st.Branch(ctx, id); err != nil || len(b) != 1 {
			return errors.Join(err, errors.New("branch is not one message"))
		}
		if err := st.ReleaseTurn(ctx, id, name); err != nil {
			return err
		}
		if _, err := st.ListSessions(ctx, 100); err != nil {
			return err
		}
		if _, err := st.AppendSource(ctx, sessions.NewSource{Path: "notes/" + id, Content: "pooled words " + id}, -1); err != nil {
			return err
		}
		if _, err := st.SearchMemory(ctx, "pooled words", 5, ""); err != nil {
			return err
		}
		if _, err := st.GrepMemory(ctx, "pooled", "", false, 10); err != nil {
			return err
		}
		if _, err := st.AppendAudit(ctx, sessions.NewAuditRecord{Type: "t"}); err != nil {
			return err
		}
		if rep, err := st.VerifyAudit(ctx, nil); err != nil || !rep.OK {
			return errors.Join(err, errors.New("audit chain broken"))
		}
	}
	return nil
}

// fillPool makes st open several connections at once, left idle in its pool.
func fillPool(t *testing.T, st *postgres.Store) {
	t.Helper()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := st.ListSessions(t.Context(), 10); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
