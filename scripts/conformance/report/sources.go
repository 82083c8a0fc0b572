package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// serverStarters are the suite's helpers that start an agent (`nomad agent`
// from $PATH); a test whose body calls one is server-backed.
var serverStarters = []string{"makeClient(", "makeACLClient(", "NewTestServer("}

// indexSources maps each top-level test function of the suite to its file
// and tells which tests start an agent. An empty dir gives empty maps.
func indexSources(dir string) (fileOf map[string]string, serverBacked map[string]bool, err error) {
	fileOf, serverBacked = map[string]string{}, map[string]bool{}
	if dir == "" {
		return fileOf, serverBacked, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		base := filepath.Base(path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			fileOf[fn.Name.Name] = base
			body := string(src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset])
			for _, s := range serverStarters {
				if strings.Contains(body, s) {
					serverBacked[fn.Name.Name] = true
					break
				}
			}
		}
	}
	return fileOf, serverBacked, nil
}
