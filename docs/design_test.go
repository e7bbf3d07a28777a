// Package docs holds the project's design document and the test that
// keeps it true to the code.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// invariantID is how code comments cite an invariant of design.md.
var invariantID = regexp.MustCompile(`\b[LCHWD][1-9]\b`)

// testRef is a test named in design.md: `TestX` (package engine) or
// `pkg.TestX`.
var testRef = regexp.MustCompile("`(?:([a-z]+(?:/[a-z]+)*)\\.)?((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)`")

// code is what the test reads of the module's Go files.
type code struct {
	comments map[string][]string // file -> its comments' text
	funcs    map[string][]string // package folder, relative to the module -> top-level funcs
}

// readCode parses every Go file of the module, comments included.
func readCode(t *testing.T) code {
	t.Helper()
	c := code{comments: map[string][]string{}, funcs: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || (strings.HasPrefix(n, ".") && path != "..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			c.comments[path] = append(c.comments[path], cg.Text())
		}
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				c.funcs[filepath.ToSlash(dir)] = append(c.funcs[filepath.ToSlash(dir)], fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readDesign(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listed returns the ids design.md's invariant tables define: rows that
// start `| ID |`.
func listed(design string) map[string]bool {
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([LCHWD][1-9]) \|`).FindAllStringSubmatch(design, -1) {
		ids[m[1]] = true
	}
	return ids
}

// TestCitedInvariantsAreDocumented fails when a code comment cites an
// invariant id that design.md does not define, so no comment points at
// nothing.
func TestCitedInvariantsAreDocumented(t *testing.T) {
	ids := listed(readDesign(t))
	if len(ids) == 0 {
		t.Fatal("design.md defines no invariants")
	}
	cited := 0
	for file, texts := range readCode(t).comments {
		for _, text := range texts {
			for _, id := range invariantID.FindAllString(text, -1) {
				cited++
				if !ids[id] {
					t.Errorf("%s: a comment cites %s, which docs/design.md does not define", file, id)
				}
			}
		}
	}
	if cited == 0 {
		t.Error("no comment cites an invariant: is the walk finding the code?")
	}
}

// TestNamedTestsExist fails when design.md names a test, fuzz target or
// benchmark that is not in the package it names (engine when it names
// none), so the "proved by" column cannot go stale.
func TestNamedTestsExist(t *testing.T) {
	funcs := readCode(t).funcs
	for _, m := range testRef.FindAllStringSubmatch(readDesign(t), -1) {
		pkg, name := m[1], m[2]
		if pkg == "" {
			pkg = "engine"
		}
		if !slices.Contains(funcs[pkg], name) {
			t.Errorf("design.md names %s.%s, which does not exist", pkg, name)
		}
	}
}

// TestNamedFilesExist fails when design.md points at a Go file that is
// not there (a file renamed or split without the doc).
func TestNamedFilesExist(t *testing.T) {
	for _, m := range regexp.MustCompile(`\b((?:[a-z0-9_]+/)+[a-z0-9_]+\.go)\b`).FindAllStringSubmatch(readDesign(t), -1) {
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("design.md names %s, which does not exist", m[1])
		}
	}
}
