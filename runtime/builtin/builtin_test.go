package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fileTodoBash = []string{"read", "write", "edit", "apply_patch", "glob", "grep", "list", "bash", "todo_create", "todo_update", "todo_list"}

func TestRegisterWithoutStore(t *testing.T) {
	reg := tool.NewRegistry()
	if err := builtin.Register(reg, builtin.Deps{WorkDirs: []string{t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fileTodoBash, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
}

func TestRegisterEverythingAndCapabilitiesMatchAuthz(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "op.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	work := t.TempDir()
	reg := tool.NewRegistry()
	if err := builtin.Register(reg, builtin.Deps{Store: st, WorkDirs: []string{work}}); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"memory_status", "memory_search", "memory_grep", "memory_get", "memory_browse", "memory_update", "memory_promote"}, fileTodoBash...)
	if diff := cmp.Diff(want, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	for _, tl := range reg.List() {
		if tl.Capability() != authz.ToolCapability(tl.Name()) {
			t.Errorf("%s declares %s, docs/contract.md section 3 says %s", tl.Name(), tl.Capability(), authz.ToolCapability(tl.Name()))
		}
		if tl.Description() == "" {
			t.Errorf("%s has no description", tl.Name())
		}
		var schema map[string]any
		if err := json.Unmarshal(tl.InputSchema(), &schema); err != nil || schema["additionalProperties"] != false {
			t.Errorf("%s schema lacks additionalProperties:false", tl.Name())
		}
	}
	// Registering twice collides on the first name.
	if err := builtin.Register(reg, builtin.Deps{Store: st, WorkDirs: []string{work}}); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("second Register = %v, want ErrDuplicate", err)
	}
	// The workdir reaches file tools and bash.
	ex := tool.NewExecutor(nil)
	w, _ := reg.Get("write")
	if res := ex.Execute(context.Background(), w, "c", json.RawMessage(`{"path":"hello.txt","content":"hi"}`), nil); res.IsError {
		t.Fatalf("write = %s", res.Text())
	}
	t.Run("bash", func(t *testing.T) {
		if wine.Detected() {
			t.Skip(noShellUnderWine)
		}
		b, _ := reg.Get("bash")
		if res := ex.Execute(context.Background(), b, "c", json.RawMessage(`{"command":"cat hello.txt"}`), nil); res.IsError || res.Text() != "hi\n[exit code: 0]" {
			t.Errorf("bash = %q", res.Text())
		}
	})
}

// noShellUnderWine is why a test that runs a command skips under Wine.
const noShellUnderWine = "Wine has no bash (no Git for Windows) and its powershell.exe is a stub that runs nothing; the windows-latest job runs this with Git Bash"

// Deps.StateDir reaches the file tools: a constrained source cannot write
// into the state directory even when it lies inside a working directory.
// Deps.Logger gets the resolution the result does not show.
func TestStateDirIsProtected(t *testing.T) {
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "state")
	reg := tool.NewRegistry()
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := builtin.Register(reg, builtin.Deps{WorkDirs: []string{work}, StateDir: state, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	wr, _ := reg.Get("write")
	client, err := authz.NewMCPClient("0123456789abcdef", "owner/install/fedcba9876543210", authz.Scope{WorkDirs: []string{work}, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tool.WithCall(context.Background(), tool.CallInfo{Speaker: client.WithLogger(logger)})
	res := tool.NewExecutor(nil).Execute(ctx, wr, "c", json.RawMessage(`{"path":"state/config.json","content":"{}"}`), nil)
	if !res.IsError || res.Text() != "state/config.json is inside a protected directory" {
		t.Errorf("write into the state directory = %q (error %v), want the protected-directory refusal", res.Text(), res.IsError)
	}
	if !strings.Contains(log.String(), "resolution="+strconv.Quote("resolved to "+filepath.Join(state, "config.json"))) {
		t.Errorf("debug log = %q, want the resolved path", log.String())
	}
}
