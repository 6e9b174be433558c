package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

// benchTools registers the file tools on a fresh working directory with a
// small tree: d1/d2/d3/f.txt (20 lines) and 200 files in flat/.
func benchTools(b *testing.B) (string, map[string]tool.Tool) {
	b.Helper()
	work, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	deep := filepath.Join(work, "d1", "d2", "d3")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		b.Fatal(err)
	}
	var text []byte
	for i := range 20 {
		text = fmt.Appendf(text, "line %d of the file\n", i)
	}
	if err := os.WriteFile(filepath.Join(deep, "f.txt"), text, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "flat"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(work, "flat", fmt.Sprintf("f%03d.go", i)), text, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ts := map[string]tool.Tool{}
	for _, tl := range files.Tools(&files.Options{WorkDirs: []string{work}}) {
		ts[tl.Name()] = tl
	}
	return work, ts
}

func benchCall(b *testing.B, tl tool.Tool, args any) {
	b.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := tl.Execute(ctx, "c", raw, nil)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", tl.Name(), err, res.Text())
		}
	}
}

func BenchmarkRead(b *testing.B) {
	_, ts := benchTools(b)
	benchCall(b, ts["read"], map[string]any{"path": "d1/d2/d3/f.txt"})
}

func BenchmarkWrite(b *testing.B) {
	_, ts := benchTools(b)
	benchCall(b, ts["write"], map[string]any{"path": "d1/d2/d3/w.txt", "content": "hello\n"})
}

func BenchmarkEdit(b *testing.B) {
	_, ts := benchTools(b)
	benchToggle(b, ts["edit"],
		map[string]any{"path": "d1/d2/d3/f.txt", "old_string": "line 3 of the file\n", "new_string": "line 3 of the file!\n"},
		map[string]any{"path": "d1/d2/d3/f.txt", "old_string": "line 3 of the file!\n", "new_string": "line 3 of the file\n"})
}

// BenchmarkApplyPatch adds a file and updates another, then deletes and
// reverts them: two patches per iteration, so every iteration does the
// same work.
func BenchmarkApplyPatch(b *testing.B) {
	_, ts := benchTools(b)
	benchToggle(b, ts["apply_patch"],
		map[string]any{"patch": "*** Begin Patch\n*** Add File: d1/d2/d3/p.txt\n+x\n*** Update File: d1/d2/d3/f.txt\n@@\n-line 3 of the file\n+line 3 of the file!\n*** End Patch"},
		map[string]any{"patch": "*** Begin Patch\n*** Delete File: d1/d2/d3/p.txt\n*** Update File: d1/d2/d3/f.txt\n@@\n-line 3 of the file!\n+line 3 of the file\n*** End Patch"})
}

// benchToggle calls tl with there, then with back, per iteration.
func benchToggle(b *testing.B, tl tool.Tool, there, back any) {
	b.Helper()
	var raws [][]byte
	for _, a := range []any{there, back} {
		raw, err := json.Marshal(a)
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range raws {
			if res, err := tl.Execute(ctx, "c", raw, nil); err != nil || res.IsError {
				b.Fatalf("%s: %v %s", tl.Name(), err, res.Text())
			}
		}
	}
}

func BenchmarkGrep(b *testing.B) {
	_, ts := benchTools(b)
	benchCall(b, ts["grep"], map[string]any{"pattern": "line 7", "path": "flat"})
}

func BenchmarkList(b *testing.B) {
	_, ts := benchTools(b)
	benchCall(b, ts["list"], map[string]any{"path": "flat"})
}
