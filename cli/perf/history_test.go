//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	_ "github.com/openprogram/openprogram/sessions/postgres" // the postgres:// scheme
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	_ "github.com/openprogram/openprogram/sessions/sqlite" // the sqlite: scheme
)

// historyContext is model.context_tokens of the history benchmarks: a
// window of 8,000 tokens (6,000 for the history), about a dozen of their
// turns.
const historyContext = 8000

// historyPrompt is the prompt of the history benchmarks: 2,000 bytes,
// about 670 tokens.
var historyPrompt = strings.Repeat("Tell me more about the history. ", 62)

// BenchmarkPromptSendHistory measures prompt_send, over raw pipes, on a
// new session and on a session of 1,000 and 10,000 stored messages, with
// model.context_tokens set: the turn at 10,000 messages should cost about
// what a new session's does. SQLite, and PostgreSQL when
// OPENPROGRAM_TEST_DATABASE_URL is set. The long sessions are seeded
// through the Store API (user and assistant messages of 300 bytes), then
// a dozen untimed turns fill the window before the timed ones.
func BenchmarkPromptSendHistory(b *testing.B) {
	bin := binary(b)
	for _, store := range []string{"sqlite", "postgres"} {
		b.Run("store="+store, func(b *testing.B) {
			for _, n := range []int{0, 1000, 10000} {
				b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
					st := newState(b, filepath.Join(b.TempDir(), "state"), tinyScript)
					setConfig(b, st, map[string]any{"context_tokens": historyContext})
					var env []string
					url := "sqlite:" + filepath.Join(st.dir, "openprogram.db")
					if store == "postgres" {
						url = pgtest.URL(b, "op_hist")
						env = []string{"OPENPROGRAM_DATABASE_URL=" + url}
					}
					sid := ""
					if n > 0 {
						sid = "hist"
						seedHistory(b, url, sid, n)
					}
					p, _ := startRawEnv(b, bin, st, env)
					defer p.close(b)
					p.initialize(b)
					id := 100
					send := func() time.Duration {
						id++
						start := time.Now()
						promptSend(b, p, id, sid, historyPrompt)
						return time.Since(start)
					}
					warm := 0
					if n > 0 {
						warm = 12
					}
					loopLatency(b, warm, send)
				})
			}
		})
	}
}

// setConfig sets keys of the model section of st's config.json.
func setConfig(tb testing.TB, st *state, model map[string]any) {
	tb.Helper()
	path := filepath.Join(st.dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var cfg map[string]map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		tb.Fatal(err)
	}
	for k, v := range model {
		cfg["model"][k] = v
	}
	if data, err = json.Marshal(cfg); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// seedHistory stores session sid with n messages, user and assistant in
// turn, through the Store API.
func seedHistory(tb testing.TB, url, sid string, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := sessions.Open(ctx, url)
	if err != nil {
		tb.Fatalf("open the store to seed: %v", err)
	}
	defer st.Close()
	if _, err := st.CreateSession(ctx, sessions.Session{ID: sid, AgentID: "main", Source: "mcp", Title: "long"}); err != nil {
		tb.Fatal(err)
	}
	msgs := make([]sessions.NewMessage, n)
	for i := range msgs {
		role := sessions.RoleUser
		if i%2 == 1 {
			role = sessions.RoleAssistant
		}
		head := fmt.Sprintf("seeded message %d: ", i)
		msgs[i] = sessions.NewMessage{Role: role, Content: head + strings.Repeat("x", 300-len(head))}
	}
	if _, err := st.AppendMessages(ctx, sid, "", msgs, true); err != nil {
		tb.Fatalf("seed %d messages: %v", n, err)
	}
}

// startRawEnv is startRaw with env added to the server's environment.
func startRawEnv(tb testing.TB, bin string, st *state, env []string) (*rawProc, time.Time) {
	tb.Helper()
	if len(env) == 0 {
		return startRaw(tb, bin, st, initializeLine)
	}
	withEnv := *st
	withEnv.extra = env
	return startRaw(tb, bin, &withEnv, initializeLine)
}

// promptSend sends prompt to session sid ("": a new one), waits for its
// answer, which must be a reply, and returns the answer's session id.
func promptSend(tb testing.TB, p *rawProc, id int, sid, prompt string) string {
	tb.Helper()
	args := map[string]string{"prompt": prompt}
	if sid != "" {
		args["session_id"] = sid
	}
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "prompt_send", "arguments": args}})
	if err != nil {
		tb.Fatal(err)
	}
	p.send(tb, append(line, '\n'))
	m, _ := p.response(tb, strconv.Itoa(id))
	if m.Error != nil || !strings.Contains(string(m.Result), "[scripted]") || strings.Contains(string(m.Result), `"isError":true`) {
		tb.Fatalf("prompt_send %d: result=%.300s error=%+v", id, m.Result, m.Error)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &out) != nil || out.SessionID == "" {
		tb.Fatalf("prompt_send %d: no session id in result=%.300s", id, m.Result)
	}
	return out.SessionID
}
