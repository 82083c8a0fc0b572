package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/drover-project/drover"

// TestImportsPointDown: no package below the CLI imports command/ (the CLI
// and the agent's wiring sit on top of every other layer), and nothing but
// tests, and e2e/'s own packages (test harnesses themselves), imports
// e2e/ or testutil/.
func TestImportsPointDown(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(path, "_test.go")
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(p, module+"/")
			switch {
			case strings.HasPrefix(dep, "command") && top != "command" && top != "cmd" && top != "e2e":
				t.Errorf("%s imports %s: only the CLI's own packages, main and the e2e tests may import command/", rel, p)
			case (strings.HasPrefix(dep, "e2e") || strings.HasPrefix(dep, "testutil")) && !isTest && top != "testutil" && top != "e2e":
				t.Errorf("%s imports %s: test fixtures are for tests", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d Go files: the walk missed the tree", files)
	}
}
