package settings

import (
	"errors"
	"strings"
	"testing"
)

// SetText refuses, with the error type the command line turns into a
// usage error, an unknown key, a value its parser refuses, and a value the
// whole configuration refuses.
func TestSetTextRefusals(t *testing.T) {
	var unknown *UnknownKeyError
	if err := newConfig().SetText("model.nam", "x"); !errors.As(err, &unknown) || !strings.Contains(err.Error(), `did you mean "model.name"`) {
		t.Errorf("SetText(model.nam) = %v, want an *UnknownKeyError naming model.name", err)
	}
	for _, tc := range []struct{ key, text, want string }{
		{"agent.max_steps", "0", "invalid value for agent.max_steps: "},
		{"mcp_server.exposed_tools", "[bad", "invalid value for mcp_server.exposed_tools: not valid JSON"},
		{"model.script", "relative.json", `invalid value for model.script: "relative.json" is not an absolute path`},
		{"mcp_server.tasks.default_ttl", "24h", "mcp_server.tasks.default_ttl cannot be set: "},
	} {
		c := configOf(t, map[string]string{"mcp_server.tasks.max_ttl": "2h"})
		err := c.SetText(tc.key, tc.text)
		var refusedErr *RefusedError
		if !errors.As(err, &refusedErr) || !strings.HasPrefix(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "; config.json was not changed") {
			t.Errorf("SetText(%s, %s) = %v, want a *RefusedError starting %q", tc.key, tc.text, err, tc.want)
		}
	}
	c := configOf(t, map[string]string{"model.temperature": "0.5"})
	if err := c.SetText("model.provider", "anthropic"); err == nil || !strings.Contains(err.Error(), "model.provider cannot be set: ") {
		t.Errorf("SetText(model.provider, anthropic) after a temperature = %v, want a refusal", err)
	}
}

// Unset says whether the key was set, and refuses a default the rules
// across keys refuse.
func TestUnset(t *testing.T) {
	c := configOf(t, map[string]string{"mcp_server.tasks.default_ttl": "10m", "mcp_server.tasks.max_ttl": "20m"})
	if changed, err := c.Unset("agent.max_steps"); changed || err != nil {
		t.Errorf("Unset of a key never set = %v, %v; want false, nil", changed, err)
	}
	var refusedErr *RefusedError
	if _, err := c.Unset("mcp_server.tasks.default_ttl"); !errors.As(err, &refusedErr) || !strings.Contains(err.Error(), "cannot be unset") {
		t.Errorf("Unset(default_ttl) above max_ttl = %v, want a *RefusedError", err)
	}
	c = configOf(t, map[string]string{"agent.max_steps": "7"})
	if changed, err := c.Unset("agent.max_steps"); !changed || err != nil || c.Agent.MaxSteps != 20 {
		t.Errorf("Unset(agent.max_steps) = %v, %v, steps %d; want true, nil, 20", changed, err, c.Agent.MaxSteps)
	}
}

// Text and List hide secrets unless asked, and List follows the table.
func TestTextAndList(t *testing.T) {
	c := configOf(t, map[string]string{"store.url": "postgres://u:pw@h/db", "model.name": "m"})
	for _, tc := range []struct {
		key       string
		raw, show bool
		want      string
	}{
		{"store.url", false, false, `"postgres://u:xxxxx@h/db"`},
		{"store.url", true, true, "postgres://u:pw@h/db"},
		{"model.name", true, false, "m"},
		{"agent.work_dirs", true, false, "[]"},
	} {
		if got, err := c.Text(tc.key, tc.raw, tc.show); err != nil || got != tc.want {
			t.Errorf("Text(%s, raw %v, show %v) = %q, %v; want %q", tc.key, tc.raw, tc.show, got, err, tc.want)
		}
	}
	var b strings.Builder
	if err := c.List(&b, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2*len(keys) {
		t.Fatalf("List wrote %d lines, want %d", len(lines), 2*len(keys))
	}
	for i, k := range keys {
		if !strings.HasPrefix(lines[2*i], k.Name+" = ") {
			t.Errorf("List line %d = %q, want key %s", 2*i, lines[2*i], k.Name)
		}
	}
	if !strings.Contains(b.String(), `store.url = "postgres://u:xxxxx@h/db" (set)`) {
		t.Errorf("List shows the store URL's password or its origin wrongly:\n%s", b.String())
	}
}
