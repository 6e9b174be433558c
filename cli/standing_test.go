package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestStandingApprovalAcrossChatAndPrompt: "allow for this session" given
// in one chat is kept in the store, so a second chat on the same state
// directory runs the tool in that session without a question, and so does
// `prompt --session`; a new session asks (prompt: denies) again. Each
// standing answer is audited.
func TestStandingApprovalAcrossChatAndPrompt(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"tool_calls":[{"name":"write","arguments":{"path":"a.txt","content":"x"}}]},{"text":"wrote it"}]`)
	const standing = "(allowed for this session: write)"

	r := chatIn(t, env, "write it\ns\n")
	sid := regexp.MustCompile(`New session (cli_[0-9a-f]{32})`).FindStringSubmatch(r.stdout)
	if r.code != 0 || sid == nil || !strings.Contains(r.stdout, "write wants to run") || strings.Contains(r.stdout, standing) {
		t.Fatalf("first chat = exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = chatIn(t, env, "again\n", "--session", sid[1])
	if r.code != 0 || !strings.Contains(r.stdout, standing) || strings.Contains(r.stdout, "wants to run") || !strings.Contains(r.stdout, "<- write ok") {
		t.Errorf("second chat in %s = exit %d, want the write allowed without a question; stdout:\n%s", sid[1], r.code, r.stdout)
	}
	r = runCLI(t, env, "prompt", "--session", sid[1], "once more")
	if r.code != 0 || !strings.Contains(r.stderr, standing) || strings.Contains(r.stderr, "denied in this turn") {
		t.Errorf("prompt --session %s = exit %d, stderr %q; want the write allowed", sid[1], r.code, r.stderr)
	}
	r = runCLI(t, env, "prompt", "in a new session")
	if !strings.Contains(r.stderr, "denied in this turn: write") || strings.Contains(r.stderr, standing) {
		t.Errorf("prompt in a new session = exit %d, stderr %q; want the write denied", r.code, r.stderr)
	}

	var decisions []string
	for line := range strings.SplitSeq(strings.TrimSpace(mustCLI(t, env, "audit", "tail", "--json", "-n", "100")), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				SessionID string `json:"session_id"`
				Decision  string `json:"decision"`
				Standing  bool   `json:"standing"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit tail line %q: %v", line, err)
		}
		if rec.Type == "owner.approval" {
			d := rec.Payload.Decision
			if rec.Payload.Standing {
				d += "+standing"
			}
			decisions = append(decisions, d)
		}
	}
	if strings.Join(decisions, " ") != "allow_session allow_session+standing allow_session+standing" {
		t.Errorf("owner.approval decisions = %v, want asked once, then standing in chat and prompt", decisions)
	}
}
