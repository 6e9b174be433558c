package tokenauth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoOutput guards, by reading the module's own non-test source, that
// nothing in it can write to stdout, stderr or a log: no logging imports,
// no fmt.Print/Fprint calls, no os.Stdout/os.Stderr, no print builtins.
// Together with the helper processes of TestCreateRaceProcesses, whose
// stderr must stay empty, it backs the promise that the token never reaches
// a log line.
func TestNoOutput(t *testing.T) {
	forbiddenImports := map[string]bool{"log": true, "log/slog": true, "log/syslog": true, "testing": true}
	forbiddenSelectors := map[string]bool{
		"os.Stdout": true, "os.Stderr": true,
		"fmt.Print": true, "fmt.Printf": true, "fmt.Println": true,
		"fmt.Fprint": true, "fmt.Fprintf": true, "fmt.Fprintln": true,
	}
	var files int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[p] {
				t.Errorf("%s imports %q", path, p)
			}
			// internal/environ reads a slice and returns a string, and
			// internal/privatefile creates, opens and checks files: they
			// write nothing to any stream.
			if p != "golang.org/x/sys/unix" && p != "golang.org/x/sys/windows" && p != "github.com/openprogram/openprogram/internal/environ" &&
				p != "github.com/openprogram/openprogram/internal/privatefile" &&
				strings.Contains(p, ".") && !strings.HasPrefix(p, "github.com/openprogram/openprogram/tokenauth/") {
				t.Errorf("%s imports %q: only the standard library, golang.org/x/sys/unix and /windows, internal/environ and internal/privatefile are allowed", path, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && forbiddenSelectors[id.Name+"."+n.Sel.Name] {
					t.Errorf("%s: uses %s.%s", fset.Position(n.Pos()), id.Name, n.Sel.Name)
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
					t.Errorf("%s: calls builtin %s", fset.Position(n.Pos()), id.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("checked %d source files, want the whole module", files)
	}
}
