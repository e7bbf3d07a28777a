package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
)

// Only the Run holds the run: no type of the engine keeps a *Run, and no
// function but the constructors (New, and Session.Start, which builds a
// session's next turn) and Run's own methods takes or returns one. The parts
// get narrow collaborators (managerDeps, genDeps, boardDeps, workerDeps),
// so each can be built and tested alone (docs/design.md, Decisions).
func TestNoBackPointersToRun(t *testing.T) {
	testpar.UnlessRace(t)
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	isRun := func(e ast.Expr) bool {
		s, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == "Run"
	}
	hasRun := func(fl *ast.FieldList) bool {
		if fl == nil {
			return false
		}
		for _, f := range fl.List {
			if isRun(f.Type) {
				return true
			}
		}
		return false
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				if hasRun(n.Fields) {
					t.Errorf("%s: a struct holds a *Run; give it narrow collaborators instead", fset.Position(n.Pos()))
				}
			case *ast.FuncDecl:
				if hasRun(n.Recv) || n.Name.Name == "New" || n.Name.Name == "Start" && n.Recv != nil && recvName(n.Recv) == "Session" {
					return true
				}
				if hasRun(n.Type.Params) || hasRun(n.Type.Results) {
					t.Errorf("%s: %s takes or returns a *Run; only New and Run's methods may", fset.Position(n.Pos()), n.Name.Name)
				}
			case *ast.FuncLit:
				if hasRun(n.Type.Params) || hasRun(n.Type.Results) {
					t.Errorf("%s: a func literal takes or returns a *Run", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// recvName is the type name of a method's receiver.
func recvName(fl *ast.FieldList) string {
	t := fl.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
