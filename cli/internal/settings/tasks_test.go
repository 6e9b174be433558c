package settings

import (
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

func TestTaskKeysValidated(t *testing.T) {
	good := map[string][]string{
		"mcp_server.tasks.enabled":     {"true", "false"},
		"mcp_server.tasks.max_working": {"1", "4", "64"},
		"mcp_server.tasks.max_runners": {"1", "16", "256"},
		"mcp_server.tasks.default_ttl": {"1s", "90m", "24h"},
		"mcp_server.tasks.max_ttl":     {"1s", "2h", "24h"},
	}
	for k, vs := range good {
		for _, v := range vs {
			if err := setText(newConfig(), k, v); err != nil {
				t.Errorf("set %s %s: %v", k, v, err)
			}
		}
	}
	bad := map[string][]string{
		"mcp_server.tasks.enabled":     {"yes", "1", "null"},
		"mcp_server.tasks.max_working": {"0", "-1", "65", "2.5", "null", `"4"`},
		"mcp_server.tasks.max_runners": {"0", "-1", "257", "2.5", "null", `"4"`},
		"mcp_server.tasks.default_ttl": {"0s", "999ms", "25h", "forever", "null", "60"},
		"mcp_server.tasks.max_ttl":     {"0s", "500ms", "48h", "null"},
	}
	for k, vs := range bad {
		for _, v := range vs {
			if err := setText(newConfig(), k, v); err == nil {
				t.Errorf("set %s %s accepted", k, v)
			}
		}
	}
}

func TestTaskSettingsTyped(t *testing.T) {
	want := host.TasksConfig{Enabled: true, MaxWorking: 4, MaxRunners: 16, DefaultTTL: time.Hour, MaxTTL: 24 * time.Hour}
	if got := configOf(t, nil).MCPServer.Tasks; got != want {
		t.Errorf("default tasks config = %+v, want %+v", got, want)
	}
	hc := configOf(t, map[string]string{
		"mcp_server.tasks.enabled": "false", "mcp_server.tasks.max_working": "2", "mcp_server.tasks.max_runners": "3",
		"mcp_server.tasks.default_ttl": "10m", "mcp_server.tasks.max_ttl": "2h",
	})
	want = host.TasksConfig{Enabled: false, MaxWorking: 2, MaxRunners: 3, DefaultTTL: 10 * time.Minute, MaxTTL: 2 * time.Hour}
	if hc.MCPServer.Tasks != want {
		t.Errorf("tasks config = %+v, want %+v", hc.MCPServer.Tasks, want)
	}
	// A default above the maximum is refused, naming both keys.
	cfg := configOf(t, map[string]string{"mcp_server.tasks.default_ttl": "3h", "mcp_server.tasks.max_ttl": "2h"})
	if err := cfg.checkAcrossKeys(); err == nil || !strings.Contains(err.Error(), "mcp_server.tasks.default_ttl") ||
		!strings.Contains(err.Error(), "mcp_server.tasks.max_ttl") {
		t.Errorf("default_ttl above max_ttl: error = %v, want one naming both keys", err)
	}
	// The loader refuses such a file.
	if _, err := parseConfig([]byte(`{"mcp_server":{"tasks":{"default_ttl":"3h","max_ttl":"2h"}}}`)); err == nil {
		t.Error("parseConfig accepted default_ttl above max_ttl")
	}
}

// The task keys live in a nested object of config.json, and a file written
// that way reads back.
func TestTaskKeysNestedInTheFile(t *testing.T) {
	c := configOf(t, map[string]string{"mcp_server.tasks.max_working": "3", "mcp_server.exposed_tools": `["memory_search"]`})
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"mcp_server\": {\n    \"exposed_tools\": [\n      \"memory_search\"\n    ],\n    \"tasks\": {\n      \"max_working\": 3\n    }\n  }\n}\n"
	if string(data) != want {
		t.Errorf("config.json =\n%s\nwant\n%s", data, want)
	}
	back, err := parseConfig(data)
	if err != nil {
		t.Fatalf("parse %s: %v", data, err)
	}
	if got := back.MCPServer.Tasks.MaxWorking; got != 3 {
		t.Errorf("mcp_server.tasks.max_working read back = %d, want 3", got)
	}
	for _, bad := range []string{`{"mcp_server":{"tasks":{"max_workers":3}}}`, `{"mcp_server":{"tasks":3}}`, `{"mcp_server":{"tasks":{"max_working":0}}}`} {
		if _, err := parseConfig([]byte(bad)); err == nil {
			t.Errorf("parseConfig(%s) accepted it", bad)
		}
	}
}
