package authz_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

func TestParseRules(t *testing.T) {
	raw := `[
		{"tool": "bash(git status:*)", "action": "allow"},
		{"tool": "bash", "action": "ask"},
		{"tool": "write(/home/me/proj/*.md)", "action": "deny"},
		{"tool": "memory_*", "action": "allow"},
		{"tool": "web_fetch({\"url\":\"https://example.com\"})", "action": "allow"},
		{"tool": "read(src/[a-c]*.go)", "action": "ask"}
	]`
	got, err := authz.ParseRules(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("ParseRules: %v", err)
	}
	want := []authz.Rule{
		{Tool: "bash(git status:*)", Action: authz.ActionAllow},
		{Tool: "bash", Action: authz.ActionAsk},
		{Tool: "write(/home/me/proj/*.md)", Action: authz.ActionDeny},
		{Tool: "memory_*", Action: authz.ActionAllow},
		{Tool: `web_fetch({"url":"https://example.com"})`, Action: authz.ActionAllow},
		{Tool: "read(src/[a-c]*.go)", Action: authz.ActionAsk},
	}
	if d := diff(got.List(), want); d != "" {
		t.Errorf("ParseRules:%s", d)
	}
	for _, empty := range []string{"", "  ", "null", "[]"} {
		rules, err := authz.ParseRules(json.RawMessage(empty))
		if err != nil || rules.Len() != 0 {
			t.Errorf("ParseRules(%q) = %v, %v; want no rules", empty, rules.List(), err)
		}
	}
}

func TestParseRulesRejects(t *testing.T) {
	cases := []struct {
		raw  string
		name string // a piece of the message that names the rule
	}{
		{`{"tool":"bash","action":"allow"}`, "must be a JSON array"},
		{`"bash"`, "must be a JSON array"},
		{`[{"tool":"bash","action":"allow"}] x`, "must be a JSON array"},
		{`[{"tool":"bash","action":"allow"},"read"]`, `tools.permission_rules[1]`},
		{`[{"tool":"bash"}]`, `tools.permission_rules[0]`},
		{`[{"action":"deny"}]`, `tools.permission_rules[0]`},
		{`[{"tool":"bash","action":"allow","note":"x"}]`, `tools.permission_rules[0]`},
		{`[{"tool":1,"action":"allow"}]`, `tools.permission_rules[0]`},
		{`[{"tool":"bash","action":"Allow"}]`, `{tool: bash, action: Allow}`},
		{`[{"tool":"bash","action":"block"}]`, `action must be`},
		{`[{"tool":"bash","action":""}]`, `tools.permission_rules[0]`},
		{`[{"tool":"","action":"deny"}]`, `tool name is empty`},
		{`[{"tool":"(x)","action":"deny"}]`, `tool name is empty`},
		{`[{"tool":"bash(","action":"deny"}]`, `name(pattern)`},
		{`[{"tool":"bash(x","action":"deny"}]`, `name(pattern)`},
		{`[{"tool":"bash)","action":"deny"}]`, `unbalanced`},
		{`[{"tool":"bash()","action":"deny"}]`, `empty pattern`},
		{`[{"tool":"bash(:*)","action":"deny"}]`, `empty prefix`},
		{`[{"tool":"bash(  :*)","action":"deny"}]`, `empty prefix`},
		{`[{"tool":"read([a-)","action":"deny"}]`, `bad glob`},
		{`[{"tool":"read(a*\\)","action":"deny"}]`, `bad glob`},
		{`[{"tool":"ba sh","action":"deny"}]`, `tool name may hold only`},
		{`[{"tool":"bash;rm","action":"deny"}]`, `tool name may hold only`},
		{`[{"tool":"mem[","action":"deny"}]`, `bad tool name glob`},
		{`[{"tool":"read(a\u0000b)","action":"deny"}]`, `NUL`},
		{`[{"tool":"bash","action":"allow"},{"tool":"read(","action":"allow"}]`, `tools.permission_rules[1]`},
	}
	for _, c := range cases {
		rules, err := authz.ParseRules(json.RawMessage(c.raw))
		if err == nil {
			t.Errorf("ParseRules(%s) = %v, nil; want an error", c.raw, rules.List())
			continue
		}
		if !errors.Is(err, authz.ErrInvalidRule) {
			t.Errorf("ParseRules(%s) error %v does not wrap ErrInvalidRule", c.raw, err)
		}
		if rules.Len() != 0 {
			t.Errorf("ParseRules(%s) returned rules with an error: %v", c.raw, rules.List())
		}
		mustContain(t, "ParseRules("+c.raw+") error", err.Error(), c.name)
	}
}

func TestRuleValidate(t *testing.T) {
	good := []string{"bash", "bash(git status:*)", "memory_*", "*", "read(*.go)", "read(/abs/path)",
		"write(src/:*)", "web_fetch(https://x/:*)", "bash(echo (a))", "todo_?"}
	for _, g := range good {
		if err := (authz.Rule{Tool: g, Action: authz.ActionDeny}).Validate(); err != nil {
			t.Errorf("Rule{%q}.Validate() = %v, want nil", g, err)
		}
	}
	if err := (authz.Rule{Tool: "bash"}).Validate(); !errors.Is(err, authz.ErrInvalidRule) {
		t.Errorf("rule without action: Validate() = %v, want ErrInvalidRule", err)
	}
}
