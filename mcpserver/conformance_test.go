package mcpserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the server section of the conformance txtar files")

// TestConformance replays testdata/conformance/*.txtar. Each archive has a
// "client" file, one raw line per frame sent verbatim (blank lines are
// skipped), and a "server" file with every frame the server wrote,
// indented. Each client line is followed by synctest.Wait, so the server
// has done all it can before the next line and the output is
// deterministic; after the last line stdin is closed and Serve must return
// nil. Run with -update to rewrite the server files.
//
// The environment is newEnv's: fixed session ids (mcp_000…1, …2, ...),
// synctest's clock, and the runtime tools of testTools.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "conformance", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no conformance tests found")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runConformance(t, path) })
		})
	}
}

func runConformance(t *testing.T, path string) {
	arch, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var client []string
	var want []string
	var sawClient bool
	for _, f := range arch.Files {
		switch f.Name {
		case "client":
			sawClient = true
			for line := range strings.Lines(string(f.Data)) {
				if line = strings.TrimRight(line, "\r\n"); strings.TrimSpace(line) != "" {
					client = append(client, line)
				}
			}
		case "server":
			want, err = splitFrames(f.Data)
			if err != nil {
				t.Fatalf("%s: server section: %v", path, err)
			}
		default:
			t.Fatalf("%s: unexpected file %q", path, f.Name)
		}
	}
	if !sawClient {
		t.Fatalf("%s: no client section", path)
	}

	// Archives named tasks_* run a server with task support, whose task
	// runners run in the bubble (see newTaskEnv).
	var (
		e  *env
		te *taskEnv
	)
	if strings.HasPrefix(filepath.Base(path), "tasks_") {
		te = newTaskEnv(t, nil)
		e = te.env
	} else if e, err = newEnv(nil); err != nil {
		t.Fatal(err)
	}
	w := startWire(t.Context(), t, e)
	for _, line := range client {
		w.send(line)
		synctest.Wait()
	}
	if err := w.close(); err != nil {
		t.Errorf("Serve returned %v after EOF, want nil", err)
	}
	if te != nil {
		te.runners.Wait()
	}
	var got []string
	for _, f := range w.all() {
		pretty, err := indent(f)
		if err != nil {
			t.Fatalf("server frame %q: %v", f, err)
		}
		got = append(got, pretty)
	}

	if *update {
		var buf bytes.Buffer
		for _, g := range got {
			buf.WriteString(g)
			buf.WriteByte('\n')
		}
		out := &txtar.Archive{Comment: arch.Comment}
		replaced := false
		for _, f := range arch.Files {
			if f.Name == "server" {
				f.Data, replaced = buf.Bytes(), true
			}
			out.Files = append(out.Files, f)
		}
		if !replaced {
			out.Files = append(out.Files, txtar.File{Name: "server", Data: buf.Bytes()})
		}
		if err := os.WriteFile(path, txtar.Format(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server frames mismatch (-want +got):\n%s", diff)
	}
}

// splitFrames reads a sequence of JSON values and returns each indented.
func splitFrames(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []string
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		pretty, err := indent(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, pretty)
	}
	return out, nil
}

// indent renders a JSON value with sorted keys and tab indentation.
func indent(raw []byte) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "\t")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimRight(buf.String(), "\n"), nil
}
