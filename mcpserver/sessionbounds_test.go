package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/sessions"
)

// seedSession creates session id in e's store with the messages contents,
// root first.
func seedSession(t *testing.T, e *env, id, title string, contents ...string) []sessions.Message {
	t.Helper()
	ctx := context.Background()
	if _, err := e.store.CreateSession(ctx, sessions.Session{ID: id, AgentID: "main", Source: "cli", Title: title}); err != nil {
		t.Fatal(err)
	}
	var out []sessions.Message
	parent := ""
	for i, c := range contents {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs, err := e.store.AppendMessages(ctx, id, parent, []sessions.NewMessage{{Role: role, Content: c}}, true)
		if err != nil {
			t.Fatal(err)
		}
		parent = msgs[0].ID
		out = append(out, msgs[0])
	}
	return out
}

// handshaken starts Serve over a wire and completes the handshake; its
// frames are taken. It runs inside a synctest bubble.
func handshaken(t *testing.T, e *env) *wire {
	t.Helper()
	w := startWire(t.Context(), t, e)
	for _, l := range handshake {
		w.send(l)
	}
	synctest.Wait()
	w.take()
	return w
}

// callText sends one tools/call over w and returns the text of its result.
func callText(t *testing.T, w *wire, id int, name, args string) string {
	t.Helper()
	w.take()
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args))
	synctest.Wait()
	frames := w.take()
	if len(frames) != 1 {
		t.Fatalf("%s: got %d frames, want 1", name, len(frames))
	}
	var resp struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(frames[0], &resp); err != nil || resp.Result.IsError || len(resp.Result.Content) != 1 {
		t.Fatalf("%s: not a successful one-text result: %.300s", name, frames[0])
	}
	return resp.Result.Content[0].Text
}

// TestSessionGetPayloadIsBounded pins the session_get bounds on the wire:
// content over contracts.MaxMessageContentBytes keeps its head and tail
// around the truncation marker, the payload stays within
// contracts.MaxSessionPayloadBytes by keeping the newest messages, and the
// first of them says how many older ones were left out. Every frame passes
// the official schema (startWire checks them).
func TestSessionGetPayloadIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEnv(t)
		// 24 messages of 1 MiB, each starting and ending with its number
		// and holding quotes (escaped in the payload): 24 MiB of content.
		const n = 24
		var contents []string
		for i := range n {
			body := strings.Repeat(`"é" `, (1<<20)/6)
			contents = append(contents, fmt.Sprintf("head %02d|%s|tail %02d", i, body, i))
		}
		branch := seedSession(t, e, "cli_big", "big", contents...)
		w := handshaken(t, e)
		text := callText(t, w, 1, "session_get", `{"session_id":"cli_big"}`)
		if len(text) > contracts.MaxSessionPayloadBytes {
			t.Errorf("payload is %d bytes, want at most %d", len(text), contracts.MaxSessionPayloadBytes)
		}
		var got []contracts.Message
		if err := contracts.DecodePayload(text, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(got) >= n {
			t.Fatalf("got %d messages of %d, want the newest few", len(got), n)
		}
		omitted := n - len(got)
		for i, m := range got {
			src := branch[omitted+i]
			if m.ID != src.ID || m.Role != src.Role {
				t.Errorf("message %d is %s/%s, want %s/%s (the newest, root first)", i, m.ID, m.Role, src.ID, src.Role)
			}
			content := m.Content
			if i == 0 {
				marker := contracts.OmittedMessagesMarker(omitted)
				if !strings.HasPrefix(content, marker) {
					t.Errorf("first content starts %.60q, want the marker %q", content, marker)
				}
				content = strings.TrimPrefix(content, marker)
			}
			if len(content) > contracts.MaxMessageContentBytes+64 {
				t.Errorf("message %d content is %d bytes, want about %d", i, len(content), contracts.MaxMessageContentBytes)
			}
			head, tail := fmt.Sprintf("head %02d|", omitted+i), fmt.Sprintf("|tail %02d", omitted+i)
			if !strings.HasPrefix(content, head) || !strings.HasSuffix(content, tail) || !strings.Contains(content, " bytes truncated ...]") {
				t.Errorf("message %d content is not its head and tail around the truncation marker: %.80q ... %.80q", i, content, content[max(0, len(content)-80):])
			}
		}

		// A short session is returned whole, without markers.
		seedSession(t, e, "cli_small", "small", "hi", "hello")
		small := callText(t, w, 2, "session_get", `{"session_id":"cli_small"}`)
		if strings.Contains(small, "omitted") || strings.Contains(small, "truncated") {
			t.Errorf("small session has a marker: %s", small)
		}
		if err := w.close(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// TestSessionsListTitlesAreBounded pins the sessions_list bound: a title
// over contracts.MaxTitleBytes is cut on a UTF-8 boundary and ends in "...".
func TestSessionsListTitlesAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEnv(t)
		seedSession(t, e, "cli_long", strings.Repeat("é", 1<<20))
		w := handshaken(t, e)
		var got []contracts.SessionSummary
		if err := contracts.DecodePayload(callText(t, w, 1, "sessions_list", `{}`), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("got %d sessions, want 1", len(got))
		}
		title := got[0].Title
		if len(title) > contracts.MaxTitleBytes+len("...") || !strings.HasSuffix(title, "...") || !strings.HasPrefix(title, "éé") {
			t.Errorf("title is %d bytes ending %q, want at most %d bytes of é and \"...\"", len(title), title[max(0, len(title)-8):], contracts.MaxTitleBytes)
		}
		if err := w.close(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// TestSessionGetReservesItsResponse pins that session_get counts its
// response against the connection's in-flight budget before it reads the
// branch: while one session_get holds its reservation (its branch read is
// stuck), a second one does not read the store at all.
func TestSessionGetReservesItsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEnv(t)
		seedSession(t, e, "cli_a", "a", "one", "two")
		release := make(chan struct{})
		e.store.branchHook = func() { <-release }
		w := handshaken(t, e)
		for id := 1; id <= 3; id++ {
			w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"session_get","arguments":{"session_id":"cli_a"}}}`, id))
		}
		synctest.Wait()
		if got := e.store.branchReads(); got != 1 {
			t.Errorf("%d session_get read the branch at once, want 1", got)
		}
		close(release)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := len(w.take()); got != 3 {
			t.Errorf("%d answers after the release, want 3", got)
		}
		if got := e.store.branchReads(); got != 3 {
			t.Errorf("%d branch reads in all, want 3", got)
		}
		if err := w.close(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
