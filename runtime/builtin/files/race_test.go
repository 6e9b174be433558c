package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

// raceBudget bounds how long TestSymlinkSwapRace swaps and writes.
const raceBudget = 3 * time.Second

// TestSymlinkSwapRace flips a directory entry of the working directory
// between a real directory and a symlink (to a directory outside, or to
// the working directory's .git) as fast as it can, while write, edit,
// apply_patch and read calls from a constrained source run through the
// gate into it. No byte may ever land outside the working directory or
// inside .git, and no read may return a file outside.
func TestSymlinkSwapRace(t *testing.T) {
	if testing.Short() {
		t.Skip("a timed race; runs without -short")
	}
	for _, target := range []string{"outside", ".git"} {
		t.Run(target, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(root, "work")
			outside := filepath.Join(root, "outside")
			git := filepath.Join(work, ".git")
			for _, d := range []string{work, outside, git} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			linkTo := outside
			if target == ".git" {
				linkTo = git
			}
			flip := filepath.Join(work, "d")
			// The same name on the far side of the link: edits must not reach
			// it, reads from outside must not return it.
			const secret = "SECRET\n"
			far := filepath.Join(linkTo, "e")
			if err := os.WriteFile(far, []byte(secret), 0o644); err != nil {
				t.Fatal(err)
			}

			reg := tool.NewRegistry()
			for _, tl := range files.Tools(&files.Options{WorkDirs: []string{work}}) {
				if err := reg.Register(tl); err != nil {
					t.Fatal(err)
				}
			}
			// The owner with every tool allowed: the gate lets every call
			// through, so what holds the writes in is the tool's own
			// confinement alone.
			allowAll, err := authz.NewRules(authz.Rule{Tool: "*", Action: authz.ActionAllow})
			if err != nil {
				t.Fatal(err)
			}
			req, err := authz.NewOwner("owner/install/fedcba9876543210", false, authz.Scope{Rules: allowAll, WorkDirs: []string{work}})
			if err != nil {
				t.Fatal(err)
			}
			ex := tool.NewExecutor(nil)

			ctx, cancel := context.WithTimeout(context.Background(), raceBudget)
			defer cancel()
			var swaps, tries, written, leaked atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				for ctx.Err() == nil {
					_ = os.RemoveAll(flip)
					_ = os.Mkdir(flip, 0o755)
					_ = os.WriteFile(filepath.Join(flip, "e"), []byte("seed\n"), 0o644)
					_ = os.RemoveAll(flip)
					_ = os.Symlink(linkTo, flip)
					swaps.Add(1)
				}
			})
			for w := range 3 {
				wg.Go(func() {
					for i := 0; ctx.Err() == nil; i++ {
						var name string
						var args any
						switch i % 4 {
						case 0:
							name, args = "write", map[string]any{"path": fmt.Sprintf("d/w%d-%d", w, i), "content": "payload\n"}
						case 1:
							name, args = "edit", map[string]any{"path": "d/e", "old_string": "seed", "new_string": "payload"}
						case 2:
							name, args = "read", map[string]any{"path": "d/e"}
						default:
							name, args = "apply_patch", map[string]any{"patch": fmt.Sprintf("*** Begin Patch\n*** Add File: d/p%d-%d\n+payload\n*** End Patch", w, i)}
						}
						raw, _ := json.Marshal(args)
						tl, _ := reg.Get(name)
						res := gated(ex, tl, req, raw)
						tries.Add(1)
						switch {
						case name == "read":
							if target == "outside" && strings.Contains(res.Text(), "SECRET") {
								leaked.Add(1)
							}
						case !res.IsError:
							written.Add(1)
						}
					}
				})
			}
			wg.Wait()
			_ = os.RemoveAll(flip)
			t.Logf("%d calls (%d writes succeeded) against %d swaps in %s", tries.Load(), written.Load(), swaps.Load(), raceBudget)
			if n := leaked.Load(); n > 0 {
				t.Errorf("%d reads returned the file outside the working directory", n)
			}
			if swaps.Load() < 10 || written.Load() == 0 {
				t.Fatalf("the race was not exercised: %d swaps, %d successful writes", swaps.Load(), written.Load())
			}
			for _, dir := range []string{outside, git} {
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if p == far {
						if b, _ := os.ReadFile(p); string(b) == secret {
							return nil
						}
					}
					if err == nil && p != dir {
						t.Errorf("a write landed in %s: %s", dir, p)
					}
					return nil
				})
			}
		})
	}
}

// gated runs tl the way the gate in front of every tool does: authz.Decide
// for sp first, the tool only when allowed, with sp in its CallInfo. The
// denial is the decision's text.
func gated(ex *tool.Executor, tl tool.Tool, sp authz.Speaker, raw json.RawMessage) tool.Result {
	if d := authz.Decide(sp, tl.Name(), raw); !d.Allowed {
		return tool.ErrorResult(d.ReasonCode, d.Message)
	}
	ctx := tool.WithCall(context.Background(), tool.CallInfo{Speaker: sp})
	return ex.Execute(ctx, tl, "c", raw, nil)
}
