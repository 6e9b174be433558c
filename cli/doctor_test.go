package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli"
)

// doctorLine matches one check line of `openprogram doctor`: status, the
// name padded to 22 columns (longer names are not cut), one space, info.
var doctorLine = regexp.MustCompile(`^(ok  |warn|FAIL)  (.{22,}?) (\S.*)$`)

// doctorCheck is one parsed check.
type doctorCheck struct {
	status, name, info, fix string
}

// parseDoctor parses doctor's stdout into checks, in order.
func parseDoctor(t *testing.T, out string) []doctorCheck {
	t.Helper()
	var checks []doctorCheck
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if m := doctorLine.FindStringSubmatch(line); m != nil {
			checks = append(checks, doctorCheck{status: strings.TrimSpace(m[1]), name: strings.TrimSpace(m[2]), info: m[3]})
			continue
		}
		fix, ok := strings.CutPrefix(strings.TrimSpace(line), "fix: ")
		if !ok || len(checks) == 0 {
			t.Fatalf("doctor line %q is neither a check nor a fix", line)
		}
		checks[len(checks)-1].fix = fix
	}
	return checks
}

func findCheck(t *testing.T, checks []doctorCheck, name string) doctorCheck {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("doctor has no %q check: %+v", name, checks)
	return doctorCheck{}
}

// healthy returns an install doctor finds nothing wrong with: a token (also
// in the environment), the scripted model and one exposed tool.
func healthy(t *testing.T) (cli.Env, string, string) {
	t.Helper()
	env, state := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	script := filepath.Join(state, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, env, "config", "set", "model.provider", "scripted")
	mustCLI(t, env, "config", "set", "model.script", script)
	mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["memory_search"]`)
	env = append(env, "OPENPROGRAM_MCP_TOKEN="+token)
	mustCLI(t, env, "mcp", "serve") // stdin ends at once; the store now exists
	return env, state, token
}

// TestDoctorFreshInstall: on a machine where nothing was set up, doctor
// fails naming the missing state directory and token with the command
// that fixes them, and changes nothing.
func TestDoctorFreshInstall(t *testing.T) {
	env, state := fresh(t)
	r := runCLI(t, env, "doctor")
	if r.code != cli.ExitFailure {
		t.Errorf("doctor on a fresh machine: exit %d, want 1", r.code)
	}
	checks := parseDoctor(t, r.stdout)
	sd := findCheck(t, checks, "state directory")
	if sd.status != "FAIL" || !strings.Contains(sd.info, "does not exist") || !strings.Contains(sd.fix, "openprogram mcp token create") {
		t.Errorf("state directory check = %+v, want FAIL, does not exist, fix: openprogram mcp token create", sd)
	}
	tk := findCheck(t, checks, "token")
	if tk.status != "FAIL" || tk.fix != "openprogram mcp token create" {
		t.Errorf("token check = %+v, want FAIL with fix: openprogram mcp token create", tk)
	}
	if mp := findCheck(t, checks, "model provider"); mp.status != "warn" || mp.fix == "" {
		t.Errorf("model provider check = %+v, want a warning with a fix", mp)
	}
	if c := findCheck(t, checks, "config"); c.status == "ok" {
		t.Errorf("config check = %+v for a state directory that does not exist, want no ok", c)
	}
	failed := 0
	for _, c := range checks {
		if c.status == "FAIL" {
			failed++
		}
	}
	if want := "Error: " + strconv.Itoa(failed) + " check(s) failed; see the fix lines above\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if _, err := os.Lstat(state); !os.IsNotExist(err) {
		t.Errorf("doctor created the state directory it reports missing (lstat: %v)", err)
	}
}

// TestDoctorHealthyInstall: everything ok, exit 0, the token compared but
// never shown.
func TestDoctorHealthyInstall(t *testing.T) {
	env, _, token := healthy(t)
	r := runCLI(t, env, "doctor")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("doctor = exit %d stderr %q, want 0\n%s", r.code, r.stderr, r.stdout)
	}
	for _, c := range parseDoctor(t, r.stdout) {
		if c.status != "ok" {
			t.Errorf("check %+v on a healthy install, want ok", c)
		}
	}
	if strings.Contains(r.stdout, token) {
		t.Errorf("doctor printed the token")
	}
	checks := parseDoctor(t, r.stdout)
	if tk := findCheck(t, checks, "token"); !strings.Contains(tk.info, "matches OPENPROGRAM_MCP_TOKEN") {
		t.Errorf("token check = %+v, want it to say the token matches", tk)
	}
	findCheck(t, checks, "exposed tool memory_search")

	// Without the env var the file is still checked, just not compared.
	r = runCLI(t, withoutToken(env), "doctor")
	if tk := findCheck(t, parseDoctor(t, r.stdout), "token"); r.code != 0 || tk.status != "ok" || !strings.Contains(tk.info, "not compared") {
		t.Errorf("doctor without the env var = exit %d, token check %+v; want ok, not compared", r.code, tk)
	}
}

// TestDoctorBrokenInstall: each breakage is reported on its own check with
// a fix line; failures exit 1, warnings alone exit 0.
func TestDoctorBrokenInstall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		breakIt  func(t *testing.T, env cli.Env, state string) cli.Env
		check    string
		status   string
		fixHas   string
		wantCode int
	}{
		{"token file mode 0644", func(t *testing.T, env cli.Env, state string) cli.Env {
			openToOthers(t, filepath.Join(state, "mcp_server_token"))
			return env
		}, "token", "FAIL", fileFixPrefix, 1},
		{"token mismatch", func(t *testing.T, env cli.Env, state string) cli.Env {
			return append(withoutToken(env), "OPENPROGRAM_MCP_TOKEN=not-the-token")
		}, "token", "FAIL", "OPENPROGRAM_MCP_TOKEN", 1},
		{"token mode 0644 without the env var", func(t *testing.T, env cli.Env, state string) cli.Env {
			openToOthers(t, filepath.Join(state, "mcp_server_token"))
			return withoutToken(env)
		}, "token", "FAIL", fileFixPrefix, 1},
		{"model endpoint unreachable", func(t *testing.T, env cli.Env, state string) cli.Env {
			mustCLI(t, env, "config", "set", "model.provider", "openai")
			mustCLI(t, env, "config", "set", "model.name", "m")
			mustCLI(t, env, "config", "set", "model.base_url", "http://127.0.0.1:1/v1")
			return env
		}, "model provider", "FAIL", "model.base_url", 1},
		{"state directory open to others", func(t *testing.T, env cli.Env, state string) cli.Env {
			openToOthers(t, state)
			return env
		}, "state directory", "FAIL", dirFixPrefix, 1},
		{"config.json malformed", func(t *testing.T, env cli.Env, state string) cli.Env {
			if err := os.WriteFile(filepath.Join(state, cli.ConfigFileName), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
			return env
		}, "config", "FAIL", "fix or remove", 1},
		{"owner principal corrupted", func(t *testing.T, env cli.Env, state string) cli.Env {
			if _, err := authz.LoadOrCreateOwnerPrincipal(state); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(state, authz.OwnerFileName)
			if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
			return env
		}, "owner principal", "FAIL", "restore", 1},
		{"exposed tool the paired tier cannot use", func(t *testing.T, env cli.Env, state string) cli.Env {
			mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["memory_search","bash"]`)
			return env
		}, "exposed tool bash", "warn", "remove it from mcp_server.exposed_tools", 0},
		{"exposed tool that does not exist", func(t *testing.T, env cli.Env, state string) cli.Env {
			mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["nope"]`)
			return env
		}, "exposed tool nope", "warn", "remove it from mcp_server.exposed_tools", 0},
		{"no model provider", func(t *testing.T, env cli.Env, state string) cli.Env {
			mustCLI(t, env, "config", "unset", "model.provider")
			return env
		}, "model provider", "warn", "failed:true", 0},
		{"script file missing", func(t *testing.T, env cli.Env, state string) cli.Env {
			if err := os.Remove(filepath.Join(state, "script.json")); err != nil {
				t.Fatal(err)
			}
			return env
		}, "model provider", "warn", "failed:true", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, state, token := healthy(t)
			env = tc.breakIt(t, env, state)
			r := runCLI(t, env, "doctor")
			if r.code != tc.wantCode {
				t.Errorf("doctor exit %d, want %d\n%s%s", r.code, tc.wantCode, r.stdout, r.stderr)
			}
			c := findCheck(t, parseDoctor(t, r.stdout), tc.check)
			if c.status != tc.status || !strings.Contains(c.fix, tc.fixHas) {
				t.Errorf("%s check = %+v, want %s with a fix containing %q", tc.check, c, tc.status, tc.fixHas)
			}
			if strings.Contains(r.stdout+r.stderr, token) {
				t.Errorf("doctor printed the token")
			}
			if (r.code == 0) != (r.stderr == "") {
				t.Errorf("stderr = %q with exit %d, want the failure summary exactly when it fails", r.stderr, r.code)
			}
		})
	}
}

// TestDoctorCreatesNothing: on an install with a token but no database yet,
// doctor reports the store as not created and leaves the state directory
// exactly as it was.
func TestDoctorCreatesNothing(t *testing.T) {
	env, state := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	before := listDir(t, state)
	r := runCLI(t, append(env, "OPENPROGRAM_MCP_TOKEN="+token), "doctor")
	st := findCheck(t, parseDoctor(t, r.stdout), "store")
	if st.status != "warn" || !strings.Contains(st.info, "no store yet") || !strings.Contains(st.info, "does not exist") {
		t.Errorf("store check = %+v, want a warning that there is no store yet", st)
	}
	if after := listDir(t, state); !slices.Equal(before, after) {
		t.Errorf("doctor changed the state directory: %v -> %v", before, after)
	}
}

// TestDoctorModelProbe: doctor sends one real request through the
// configured provider and reports its latency, or the server's refusal.
func TestDoctorModelProbe(t *testing.T) {
	var requests atomic.Int32
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer ok.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer denied.Close()

	for _, tc := range []struct {
		url, status, infoHas string
	}{{ok.URL + "/v1", "ok", "answered a test request in "}, {denied.URL + "/v1", "FAIL", "authentication"}} {
		env, _, _ := healthy(t)
		mustCLI(t, env, "config", "set", "model.provider", "openai")
		mustCLI(t, env, "config", "set", "model.name", "m")
		mustCLI(t, env, "config", "set", "model.base_url", tc.url)
		r := runCLI(t, env, "doctor")
		mp := findCheck(t, parseDoctor(t, r.stdout), "model provider")
		if mp.status != tc.status || !strings.Contains(mp.info, tc.infoHas) {
			t.Errorf("model provider check against %s = %+v, want %s and %q", tc.url, mp, tc.status, tc.infoHas)
		}
	}
	if requests.Load() == 0 {
		t.Errorf("doctor sent no request to the model endpoint")
	}
}

// TestDoctorHidesBaseURLPassword: the model check names the endpoint
// without the password a base URL may carry.
func TestDoctorHidesBaseURLPassword(t *testing.T) {
	env, _, _ := healthy(t)
	mustCLI(t, env, "config", "set", "model.provider", "openai")
	mustCLI(t, env, "config", "set", "model.name", "m")
	mustCLI(t, env, "config", "set", "model.base_url", "http://user:pw-secret-42@127.0.0.1:1/v1")
	r := runCLI(t, env, "doctor")
	mp := findCheck(t, parseDoctor(t, r.stdout), "model provider")
	if strings.Contains(r.stdout+r.stderr, "pw-secret-42") || !strings.Contains(mp.info, "127.0.0.1:1") {
		t.Errorf("doctor's model check = %+v (output %q), want the endpoint named without its password", mp, r.stdout+r.stderr)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// withoutToken returns env without OPENPROGRAM_MCP_TOKEN.
func withoutToken(env cli.Env) cli.Env {
	var out cli.Env
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENPROGRAM_MCP_TOKEN=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestDoctorScriptGone: a model.script that was removed after `config set`
// is reported by doctor, naming the key and the file.
func TestDoctorScriptGone(t *testing.T) {
	env, state, _ := healthy(t)
	script := filepath.Join(state, "script.json")
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	mp := findCheck(t, parseDoctor(t, runCLI(t, env, "doctor").stdout), "model provider")
	if mp.status == "ok" || !strings.Contains(mp.info, "model.script") || !strings.Contains(mp.info, script) {
		t.Errorf("model provider check with the script gone = %+v, want it to name model.script and %s", mp, script)
	}
}
