package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli"
)

func readConfig(t *testing.T, state string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, cli.ConfigFileName))
	if err != nil {
		t.Fatalf("read config.json: %v", err)
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("config.json %q: %v", data, err)
	}
	return m
}

// TestConfigSetGetUnset: set stores nested JSON in config.json (0600, state
// directory created 0700), get prints compact JSON, unset returns a key to
// its default.
func TestConfigSetGetUnset(t *testing.T) {
	env, state := fresh(t)
	if got := mustCLI(t, env, "config", "get", "mcp_server.exposed_tools"); got != "[]\n" {
		t.Errorf("get of an unset list = %q, want []", got)
	}
	if got := mustCLI(t, env, "config", "get", "model.name"); got != "\"\"\n" {
		t.Errorf("get of an unset string = %q, want \"\"", got)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("config get created the state directory (%v)", err)
	}

	mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["memory_search", "memory_status"]`)
	mustCLI(t, env, "config", "set", "model.name", "gpt-4o-mini")
	if got := mustCLI(t, env, "config", "get", "mcp_server.exposed_tools"); got != `["memory_search","memory_status"]`+"\n" {
		t.Errorf("get = %q, want the compact list", got)
	}
	want := map[string]map[string]any{
		"mcp_server": {"exposed_tools": []any{"memory_search", "memory_status"}},
		"model":      {"name": "gpt-4o-mini"},
	}
	if diff := cmp.Diff(want, readConfig(t, state)); diff != "" {
		t.Errorf("config.json (-want +got):\n%s", diff)
	}
	checkPrivate(t, state)
	checkPrivate(t, filepath.Join(state, cli.ConfigFileName))

	mustCLI(t, env, "config", "unset", "model.name")
	if got := mustCLI(t, env, "config", "get", "model.name"); got != "\"\"\n" {
		t.Errorf("get after unset = %q, want the default \"\"", got)
	}
	if _, ok := readConfig(t, state)["model"]; ok {
		t.Errorf("config.json still has a model section after unsetting its only key")
	}
	// Unsetting what is not set changes nothing.
	mustCLI(t, env, "config", "unset", "model.name")
}

// TestConfigValueParsing: VALUE is JSON when it is valid JSON, else the
// literal string; each key's validator then accepts or refuses it.
func TestConfigValueParsing(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       string // what config get prints; "" = refused
	}{
		{"model.name", "gpt-4o", `"gpt-4o"`},
		{"model.name", `"true"`, `"true"`},
		{"model.name", "true", ""},
		{"model.name", "42", ""},
		{"model.name", "with spaces and \"quotes\"", `"with spaces and \"quotes\""`},
		{"agent.system_prompt", `"42"`, `"42"`},
		{"agent.system_prompt", "<b>be brief</b> & kind", `"<b>be brief</b> & kind"`},
		{"mcp_server.exposed_tools", `["memory_search"]`, `["memory_search"]`},
		{"mcp_server.exposed_tools", `[]`, `[]`},
		{"mcp_server.exposed_tools", "memory_search", ""},
		{"mcp_server.exposed_tools", `"memory_search"`, ""},
		{"mcp_server.exposed_tools", `{"a":1}`, ""},
		{"mcp_server.exposed_tools", `[1]`, ""},
		{"mcp_server.exposed_tools", `["has space"]`, ""},
		{"mcp_server.exposed_tools", `["memory_search"] trailing`, ""},
		{"mcp_server.exposed_tools", `null`, ""},
		{"mcp_server.exposed_tools", `["memory_search",`, ""},
		{"mcp_server.exposed_tools", `[memory_search]`, ""},
		{"tools.permission_rules", `[{"tool":"bash",}]`, ""},
		{"agent.work_dirs", `{"a":`, ""},
		{"tools.permission_rules", `[{"tool":"bash","action":"deny"}]`, `[{"action":"deny","tool":"bash"}]`},
		{"tools.permission_rules", `[{"tool":"bash","action":"maybe"}]`, ""},
		{"tools.permission_rules", `{"tool":"bash","action":"deny"}`, ""},
		{"store.url", "sqlite:/var/lib/op.db", `"sqlite:/var/lib/op.db"`},
		{"store.url", "postgres://u@db/x?sslmode=disable", `"postgres://u@db/x?sslmode=disable"`},
		{"store.url", "mysql://u@db/x", ""},
		{"model.provider", "scripted", `"scripted"`},
		{"model.provider", "gpt", ""},
		{"model.base_url", "http://127.0.0.1:11434/v1", `"http://127.0.0.1:11434/v1"`},
		{"model.base_url", "ftp://example.com", ""},
		{"model.api_key_env", "MY_KEY", `"MY_KEY"`},
		{"model.api_key_env", "1BAD", ""},
		{"agent.work_dirs", workDirsJSON, workDirsJSON},
		{"agent.work_dirs", `["relative/dir"]`, ""},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			env, state := fresh(t)
			r := runCLI(t, env, "config", "set", tc.key, tc.value)
			if tc.want == "" {
				if r.code != cli.ExitUsage {
					t.Errorf("set refused value: exit %d, want %d", r.code, cli.ExitUsage)
				}
				if !strings.HasPrefix(r.stderr, "Error: invalid value for "+tc.key+": ") || !strings.HasSuffix(r.stderr, "; config.json was not changed\n") {
					t.Errorf("stderr = %q, want it to name the key and say nothing changed", r.stderr)
				}
				if _, err := os.Stat(filepath.Join(state, cli.ConfigFileName)); !os.IsNotExist(err) {
					t.Errorf("a refused value wrote config.json (%v)", err)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("set: exit %d: %s", r.code, r.stderr)
			}
			if got := mustCLI(t, env, "config", "get", tc.key); got != tc.want+"\n" {
				t.Errorf("get = %q, want %q", got, tc.want+"\n")
			}
		})
	}
}

// TestConfigRefusalLeavesFileUntouched: a refused value (a non-list
// exposed_tools) leaves config.json byte for byte as it was, same inode,
// and no temp file behind.
func TestConfigRefusalLeavesFileUntouched(t *testing.T) {
	env, state := fresh(t)
	mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["memory_status"]`)
	path := filepath.Join(state, cli.ConfigFileName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fiBefore, _ := os.Stat(path)
	os.SameFile(fiBefore, fiBefore) // on Windows the file's id is read now, not after the write
	for _, v := range []string{"memory_search", `"memory_search"`, `{"x":true}`, "42"} {
		r := runCLI(t, env, "config", "set", "mcp_server.exposed_tools", v)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "want a JSON list") || r.stdout != "" {
			t.Errorf("set exposed_tools %s = exit %d stdout %q stderr %q, want 2 and a list hint", v, r.code, r.stdout, r.stderr)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("config.json changed:\nbefore %q\nafter  %q", before, after)
	}
	if fiAfter, _ := os.Stat(path); !os.SameFile(fiBefore, fiAfter) {
		t.Errorf("config.json was replaced")
	}
	checkOnlyFiles(t, state, cli.ConfigFileName)
}

// checkOnlyFiles requires dir to hold exactly names.
func checkOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	if diff := cmp.Diff(names, listDir(t, dir)); diff != "" {
		t.Errorf("files in %s (-want +got):\n%s", dir, diff)
	}
}

// TestConfigAtomicWrite: a write replaces config.json with a new 0600 file
// (even over a 0644 one) and leaves no temp file.
func TestConfigAtomicWrite(t *testing.T) {
	env, state := fresh(t)
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, cli.ConfigFileName)
	if err := os.WriteFile(path, []byte(`{"model":{"name":"old"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fiBefore, _ := os.Stat(path)
	os.SameFile(fiBefore, fiBefore) // on Windows the file's id is read now, not after the write
	mustCLI(t, env, "config", "set", "model.name", "new")
	checkPrivate(t, path)
	if fiAfter, _ := os.Stat(path); os.SameFile(fiBefore, fiAfter) {
		t.Errorf("config.json was rewritten in place, want a new file renamed over it")
	}
	if got := readConfig(t, state)["model"]["name"]; got != "new" {
		t.Errorf("model.name = %v, want new", got)
	}
	checkOnlyFiles(t, state, cli.ConfigFileName)
}

// TestConfigMalformedJSON: a list key given malformed JSON is refused as
// not JSON (it is never stored as a string), saying how to quote it.
func TestConfigMalformedJSON(t *testing.T) {
	env, _ := fresh(t)
	r := runCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["a",`)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "not valid JSON") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("set malformed JSON = exit %d stderr %q, want 2 and one line saying it is not valid JSON", r.code, r.stderr)
	}
}

// TestConfigDidYouMean: an unknown key close to a known one names it.
func TestConfigDidYouMean(t *testing.T) {
	env, _ := fresh(t)
	for key, want := range map[string]string{
		"mcp_server.exposed_tool": "mcp_server.exposed_tools",
		"exposed_tools":           "mcp_server.exposed_tools",
		"model.nmae":              "model.name",
		"store.URL":               "store.url",
	} {
		r := runCLI(t, env, "config", "get", key)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `did you mean "`+want+`"`) {
			t.Errorf("get %s = exit %d stderr %q, want 2 and did you mean %q", key, r.code, r.stderr, want)
		}
	}
}

// TestConfigSecrets: list and get hide the store URL's password unless
// --show-secrets; get --raw prints strings unquoted.
func TestConfigSecrets(t *testing.T) {
	env, _ := fresh(t)
	url := "postgres://op:s3cret-pw@db.example/op?sslmode=disable"
	mustCLI(t, env, "config", "set", "store.url", url)
	for _, args := range [][]string{{"config", "list"}, {"config", "get", "store.url"}, {"config", "get", "--raw", "store.url"}} {
		if out := mustCLI(t, env, args...); strings.Contains(out, "s3cret-pw") || !strings.Contains(out, "db.example") {
			t.Errorf("%v = %q, want the URL with its password hidden", args, out)
		}
	}
	if out := mustCLI(t, env, "config", "get", "--raw", "--show-secrets", "store.url"); out != url+"\n" {
		t.Errorf("get --raw --show-secrets = %q, want %q", out, url+"\n")
	}
	if out := mustCLI(t, env, "config", "list", "--show-secrets"); !strings.Contains(out, "s3cret-pw") {
		t.Errorf("list --show-secrets hides the password:\n%s", out)
	}
	mustCLI(t, env, "config", "set", "model.name", "gpt x")
	if out := mustCLI(t, env, "config", "get", "--raw", "model.name"); out != "gpt x\n" {
		t.Errorf("get --raw model.name = %q, want the plain string", out)
	}
	if out := mustCLI(t, env, "config", "get", "--raw", "mcp_server.exposed_tools"); out != "[]\n" {
		t.Errorf("get --raw of a list = %q, want JSON", out)
	}
}

// TestConfigUnknownKey: an unknown key is a usage error (exit 2) naming
// the known keys, and nothing is written.
func TestConfigUnknownKey(t *testing.T) {
	env, state := fresh(t)
	for _, args := range [][]string{
		{"config", "get", "mcp_server.exposed"},
		{"config", "set", "mcp_server.exposed", "[]"},
		{"config", "unset", "mcp_server.exposed_toolz"},
	} {
		r := runCLI(t, env, args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "unknown config key") || !strings.Contains(r.stderr, "mcp_server.exposed_tools") {
			t.Errorf("%v = exit %d stderr %q, want 2 naming the known keys", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("an unknown key created the state directory (%v)", err)
	}
}

// TestConfigList: every key, its value and whether it is set, with help.
func TestConfigList(t *testing.T) {
	env, _ := fresh(t)
	mustCLI(t, env, "config", "set", "model.provider", "scripted")
	out := mustCLI(t, env, "config", "list")
	for _, key := range []string{"mcp_server.exposed_tools", "store.url", "model.provider", "model.name", "model.base_url",
		"model.api_key_env", "model.script", "tools.permission_rules", "agent.system_prompt", "agent.work_dirs"} {
		if !strings.Contains(out, "\n"+key+" = ") && !strings.HasPrefix(out, key+" = ") {
			t.Errorf("config list lacks %s:\n%s", key, out)
		}
	}
	if !strings.Contains(out, `model.provider = "scripted" (set)`) || !strings.Contains(out, "mcp_server.exposed_tools = [] (default)") {
		t.Errorf("config list does not tell set from default:\n%s", out)
	}
}

// TestConfigBadFile: a malformed config.json or one with an unknown key
// fails every command that reads it, naming the file.
func TestConfigBadFile(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":           `{"model": `,
		"unknown key":        `{"model":{"nmae":"x"}}`,
		"invalid value":      `{"mcp_server":{"exposed_tools":"memory_search"}}`,
		"section not object": `{"model":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			env, state := fresh(t)
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(state, cli.ConfigFileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"config", "get", "model.name"}, {"config", "set", "model.name", "x"}, {"config", "unset", "model.name"}} {
				r := runCLI(t, env, args...)
				if r.code != cli.ExitFailure || !strings.Contains(r.stderr, path) {
					t.Errorf("%v with a bad file = exit %d stderr %q, want 1 naming %s", args, r.code, r.stderr, path)
				}
				// set and unset refuse a bad file, so the hint must not send
				// the user to them.
				if strings.Contains(r.stderr, "config set") || !strings.Contains(r.stderr, "edit or remove the file") {
					t.Errorf("%v with a bad file: stderr %q, want the hint to edit or remove the file", args, r.stderr)
				}
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("the bad config.json was changed to %q", got)
			}
		})
	}
}

// TestConfigSetNegativeNumbers: a negative number reaches the validator as
// a value (it is not read as a flag) and is refused with exit 2 and a
// message naming the key; config.json is not changed.
func TestConfigSetNegativeNumbers(t *testing.T) {
	env, state := fresh(t)
	mustCLI(t, env, "config", "set", "agent.max_steps", "5")
	for _, tc := range []struct{ key, value string }{
		{"agent.max_steps", "-3"},
		{"model.temperature", "-0.5"},
		{"model.max_output_tokens", "-1e3"},
	} {
		r := runCLI(t, env, "config", "set", tc.key, tc.value)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid value for "+tc.key) || strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("config set %s %s: exit %d, stderr %q; want 2 naming the key", tc.key, tc.value, r.code, r.stderr)
		}
	}
	if got := strings.TrimSpace(mustCLI(t, env, "config", "get", "agent.max_steps")); got != "5" {
		t.Errorf("agent.max_steps after the refused values = %s, want 5", got)
	}
	data, err := os.ReadFile(filepath.Join(state, "config.json"))
	if err != nil || strings.Contains(string(data), "-") {
		t.Errorf("config.json = %q, %v; want no refused value in it", data, err)
	}
}

// TestConfigSetInvalidIsUsage: every invalid value exits 2, a combination
// the provider cannot honour included.
func TestConfigSetInvalidIsUsage(t *testing.T) {
	env, _ := fresh(t)
	mustCLI(t, env, "config", "set", "model.provider", "anthropic")
	if r := runCLI(t, env, "config", "set", "model.temperature", "0.5"); r.code != 2 || !strings.Contains(r.stderr, "model.temperature") {
		t.Errorf("config set model.temperature on anthropic: exit %d, stderr %q; want 2 naming the key", r.code, r.stderr)
	}
}

// TestConfigSetScript: model.script must name an absolute path to a
// readable file that parses as a script, when it is set.
func TestConfigSetScript(t *testing.T) {
	env, _ := fresh(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"turns":[{"text":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"turns":[{"txt":"typo"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{filepath.Join(dir, "missing.json"), bad, "good.json", dir} {
		r := runCLI(t, env, "config", "set", "model.script", value)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid value for model.script") {
			t.Errorf("config set model.script %s: exit %d, stderr %q; want 2 naming model.script", value, r.code, r.stderr)
		}
	}
	mustCLI(t, env, "config", "set", "model.script", good)
	// A file URL's path starts with a slash, before a drive letter on
	// Windows too (file:///C:/dir/good.json).
	fileURL := "file://" + filepath.ToSlash(good)
	if !strings.HasPrefix(filepath.ToSlash(good), "/") {
		fileURL = "file:///" + filepath.ToSlash(good)
	}
	mustCLI(t, env, "config", "set", "model.script", fileURL)
	if got := strings.TrimSpace(mustCLI(t, env, "config", "get", "--raw", "model.script")); got != fileURL {
		t.Errorf("model.script = %q, want the file URL", got)
	}
}
