package settings

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
)

// stateWith returns a state directory whose config.json is the fixture name.
func stateWith(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "config", name))
	if err != nil {
		t.Fatal(err)
	}
	data = fixtureData(data)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A config.json this version writes (every key set) loads unchanged into
// the typed configuration the host is built from, and is written back
// byte for byte.
func TestConfigFileLoadsTyped(t *testing.T) {
	dir := stateWith(t, "every-key.json")
	cfg, err := Load(dir, From{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	rules, err := authz.NewRules(authz.Rule{Tool: "bash(git *)", Action: authz.ActionAllow}, authz.Rule{Tool: "write_file", Action: authz.ActionDeny})
	if err != nil {
		t.Fatal(err)
	}
	want := host.Config{
		StateDir: dir,
		StoreURL: "postgres://u:pw@127.0.0.1:5432/db",
		Model: provider.Config{
			Provider: "openai", Model: "gpt-x", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "MY_KEY", Script: fixturePath("/tmp/script.json"),
			Settings: provider.Settings{Temperature: f(0.5), TopP: f(0.9), MaxOutputTokens: 2048, Timeout: 90 * time.Second,
				Headers: map[string]string{"X-Title": "OpenProgram", "api-key": "${AZ_KEY}"}},
		},
		Agent: host.AgentConfig{SystemPrompt: "Be brief.", WorkDirs: []string{fixturePath("/tmp/work")}, MaxSteps: 7, ContextTokens: 16000, TurnTimeout: 30 * time.Minute},
		MCPServer: host.MCPServerConfig{ExposedTools: []string{"memory_search", "bash"},
			Tasks: host.TasksConfig{Enabled: true, MaxWorking: 2, MaxRunners: host.DefaultTaskMaxRunners, DefaultTTL: 30 * time.Minute, MaxTTL: 2 * time.Hour}},
		Tools:     host.ToolsConfig{PermissionRules: rules},
		Audit:     host.AuditConfig{LogFailures: true},
		Telemetry: host.TelemetryConfig{ServiceName: host.DefaultServiceName},
	}
	if diff := cmp.Diff(want, cfg.Config); diff != "" {
		t.Errorf("typed config (-want +got):\n%s", diff)
	}
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !bytes.Equal(data, orig) {
		t.Errorf("written back differently:\n%s\nwant:\n%s", data, orig)
	}

	// The environment's store wins for the store used; config get still
	// shows the file's.
	cfg, err = Load(dir, From{Env: Env{EnvDatabaseURL + "=sqlite:/tmp/x.db"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, set, _ := cfg.Get("store.url"); cfg.StoreURL != "sqlite:/tmp/x.db" || !set || v != "postgres://u:pw@127.0.0.1:5432/db" {
		t.Errorf("store = %q, file %v (%v)", cfg.StoreURL, v, set)
	}
}

// Null and empty values read as unset; an empty config.json is every
// default, the store SQLite in the state directory.
func TestConfigDefaultsTyped(t *testing.T) {
	for _, dir := range []string{stateWith(t, "unset-values.json"), t.TempDir()} {
		cfg, err := Load(dir, From{})
		if err != nil {
			t.Fatal(err)
		}
		want := host.Config{
			StateDir:  dir,
			StoreURL:  "sqlite:" + filepath.Join(dir, DatabaseFileName),
			Model:     provider.Config{Settings: provider.Settings{Timeout: runtime.DefaultModelTimeout}},
			Agent:     host.AgentConfig{MaxSteps: runtime.DefaultMaxSteps},
			MCPServer: host.MCPServerConfig{Tasks: host.TasksConfig{Enabled: true, MaxWorking: 4, MaxRunners: host.DefaultTaskMaxRunners, DefaultTTL: time.Hour, MaxTTL: 24 * time.Hour}},
			Telemetry: host.TelemetryConfig{ServiceName: host.DefaultServiceName},
		}
		if diff := cmp.Diff(want, cfg.Config, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: defaults (-want +got):\n%s", dir, diff)
		}
	}
}

// Every rule is checked by the loader, which names the key; an unknown key
// is refused with the key meant.
func TestConfigLoaderRefuses(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"model":{"nam":"x"}}`, `did you mean "model.name"`},
		{`{"tools":{"permission_rules":[{"tool":"bash","action":"maybe"}]}}`, "invalid value for tools.permission_rules"},
		{`{"model":{"timeout":"forever"}}`, "invalid value for model.timeout"},
		{`{"agent":{"work_dirs":["relative"]}}`, "invalid value for agent.work_dirs"},
		{`{"model":"openai"}`, `section "model" must be an object`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, From{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
}
