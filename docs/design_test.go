// Package docs holds the project's design document and the test that
// keeps it true to the code.
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/fsdrun/fsd/spec"
)

// idPattern is an invariant's id: its table's letter and a number. L, C,
// H, W, D: skill lifecycle, catalog, channels, window, delegation; J, R,
// N, A, T, S: journal, records and resume, workers over NATS, approvals,
// trust, secrets; X, E: the sandbox and the network of sandboxed programs;
// Q sessions; O observability; P the MCP protocol; Y serving.
const idPattern = `[A-Z][1-9][0-9]?`

// invariantID is how code comments cite an invariant of design.md.
var invariantID = regexp.MustCompile(`\b` + idPattern + `\b`)

// invariantRow is a row of one of design.md's invariant tables.
var invariantRow = regexp.MustCompile(`(?m)^\| (` + idPattern + `) \|.*$`)

// testRef is a test named in design.md: `TestX` (package engine) or
// `pkg.TestX`.
var testRef = regexp.MustCompile("`(?:([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*)\\.)?((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)`")

// code is what the test reads of the module's Go files.
type code struct {
	comments map[string][]string // file -> its comments' text
	funcs    map[string][]string // package folder, relative to the module -> top-level funcs
}

// readCode parses every Go file of the module, comments included, once
// for all the tests that read it.
func readCode(t *testing.T) code {
	t.Helper()
	c, err := parsedCode()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var parsedCode = sync.OnceValues(func() (code, error) {
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
	return c, err
})

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
	for _, m := range invariantRow.FindAllStringSubmatch(design, -1) {
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

// enforcedRef is one place an invariant row's "enforced in" column
// names: a Go file and what follows its colon up to the next file.
var enforcedRef = regexp.MustCompile(`([a-z0-9_]+(?:/[a-z0-9_]+)+\.go)(?::([^;]*))?`)

// declared returns the names file declares at top level: funcs, types,
// vars and consts, and methods as Recv.Name.
func declared(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if g, ok := recv.(*ast.IndexExpr); ok {
					recv = g.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
			names[name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names
}

// TestEnforcedInExists fails when an invariant row's "enforced in"
// column names a function, method or type that the file it gives does
// not declare (a function renamed or moved without the doc). A name in
// parentheses is a remark (a field, what a function does), not checked.
func TestEnforcedInExists(t *testing.T) {
	checked := 0
	for _, m := range invariantRow.FindAllStringSubmatch(readDesign(t), -1) {
		cells := strings.Split(strings.Trim(m[0], "|"), " | ")
		if len(cells) < 4 {
			t.Errorf("design.md's row %s has %d columns, want id, rule, enforced in, proved by", m[1], len(cells))
			continue
		}
		for _, ref := range enforcedRef.FindAllStringSubmatch(cells[2], -1) {
			file := filepath.Join("..", ref[1])
			if _, err := os.Stat(file); err != nil {
				continue // TestNamedFilesExist says so
			}
			names := declared(t, file)
			remarks := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(ref[2], "")
			for _, n := range regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`").FindAllStringSubmatch(remarks, -1) {
				checked++
				if !names[n[1]] {
					t.Errorf("design.md's row %s names %s in %s, which does not declare it", m[1], n[1], ref[1])
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no function named in an \"enforced in\" column: is the pattern reading the table?")
	}
}

// TestInvariantsAreProvedAndCited fails when an invariant row names no
// test in its "proved by" column (nor says "no test yet"), or when no
// comment of a file its "enforced in" column names cites its id: the
// code that keeps a rule says so where it does, as the rule's row says.
func TestInvariantsAreProvedAndCited(t *testing.T) {
	comments := readCode(t).comments
	rows := invariantRow.FindAllStringSubmatch(readDesign(t), -1)
	if len(rows) == 0 {
		t.Fatal("design.md defines no invariants")
	}
	seen := map[string]bool{}
	for _, m := range rows {
		id := m[1]
		if seen[id] {
			t.Errorf("design.md has two rows %s: an id names one rule", id)
		}
		seen[id] = true
		cells := strings.Split(strings.Trim(m[0], "|"), " | ")
		if len(cells) < 4 {
			continue // TestEnforcedInExists says so
		}
		if !testRef.MatchString(cells[3]) && !strings.Contains(cells[3], "no test yet") {
			t.Errorf("design.md's row %s names no test that proves it (say \"no test yet\" if none does)", id)
		}
		cite := regexp.MustCompile(`\b` + id + `\b`)
		var files []string
		cited := false
		for _, ref := range enforcedRef.FindAllStringSubmatch(cells[2], -1) {
			file := filepath.Join("..", ref[1])
			files = append(files, ref[1])
			for _, text := range comments[file] {
				cited = cited || cite.MatchString(text)
			}
		}
		if len(files) == 0 {
			t.Errorf("design.md's row %s names no file where it is enforced", id)
		} else if !cited {
			t.Errorf("design.md's row %s: no comment in %s cites %s", id, strings.Join(files, ", "), id)
		}
	}
}

// TestDocumentedDefaults: where README.md or a page of docs/ gives a
// key's number as "`key` N" or "`key` (default N)", N is the default
// spec.Facts states, and the workflow reference gives every limit's
// default in its table of keys.
func TestDocumentedDefaults(t *testing.T) {
	texts := manual(t)
	checked := 0
	for _, f := range spec.Facts() {
		want, ok := f.Default.(int)
		if !ok {
			continue
		}
		name := f.Key[strings.LastIndex(f.Key, ".")+1:]
		stated := regexp.MustCompile("`" + regexp.QuoteMeta(name) + "`\\s+\\(?(?:default:?\\s+)?([0-9]+(?:,[0-9]{3})*)")
		if row := "| [`" + f.Key + "`]"; strings.HasPrefix(f.Key, "limits.") {
			ref := texts["docs/reference/workflow.md"]
			_, rest, _ := strings.Cut(ref, row)
			line, _, _ := strings.Cut(rest, "\n")
			if !strings.HasSuffix(line, fmt.Sprintf("| `%d` |", want)) {
				t.Errorf("docs/reference/workflow.md does not give %s's default (%d) in its row %q", f.Key, want, row+line)
			}
		}
		for file, text := range texts {
			ms := stated.FindAllStringSubmatch(text, -1)
			for _, m := range ms {
				checked++
				if got := strings.ReplaceAll(m[1], ",", ""); got != strconv.Itoa(want) {
					t.Errorf("%s gives %s as %s; spec.Facts states %d", file, f.Key, m[1], want)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no documented default found: is the pattern reading the docs?")
	}
}

// manual returns README.md and every page of docs/ and docs/reference/,
// by path from the repository's root.
func manual(t *testing.T) map[string]string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	reference, err := filepath.Glob("reference/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, reference...)
	out := map[string]string{}
	for _, p := range append([]string{"../README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p, "../")
		if !strings.HasPrefix(p, "../") {
			name = "docs/" + p
		}
		out[name] = string(b)
	}
	if _, ok := out["docs/formats.md"]; !ok {
		t.Fatal("docs/formats.md is missing")
	}
	return out
}

// section returns the text of design.md's "## title" section.
func section(t *testing.T, design, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(design, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("design.md has no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// tableRows returns the cells of each body row of the first markdown
// table in text.
func tableRows(text string) [][]string {
	var rows [][]string
	header := true
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 || !header {
				break
			}
			continue
		}
		if strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| ---") {
			header = false
			continue
		}
		if header {
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestPackageTable: design.md's package table has a row of its own for
// every package `go list ./...` prints, internal ones and examples'
// programs included, and no row for anything else, and gives each row
// the layer docs.TestLayers puts it in.
func TestPackageTable(t *testing.T) {
	graph := moduleImports(t)
	rows := tableRows(section(t, readDesign(t), "Packages"))
	if len(rows) == 0 {
		t.Fatal("design.md's package table has no rows")
	}
	listed := map[string]bool{}
	for _, r := range rows {
		pkg := strings.Trim(r[0], "`")
		if listed[pkg] {
			t.Errorf("design.md's package table lists %s twice", pkg)
		}
		listed[pkg] = true
		if _, ok := graph[pkg]; !ok {
			t.Errorf("design.md's package table lists %s, which is not a package of the module (go list ./...)", pkg)
		}
		if want, ok := layerOf(pkg); !ok {
			t.Errorf("design.md's package table lists %s, which docs/layers_test.go puts in no layer", pkg)
		} else if got := strings.Trim(r[len(r)-1], "`"); got != want {
			t.Errorf("design.md's package table puts %s in layer %q; docs/layers_test.go puts it in %q", pkg, got, want)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		if !listed[pkg] {
			t.Errorf("design.md's package table has no row for %s", pkg)
		}
	}
}

// TestLayerTable: design.md's layer table states the layers of
// docs/layers_test.go, in the same order, with the same packages and
// imports.
func TestLayerTable(t *testing.T) {
	rows := tableRows(section(t, readDesign(t), "Layers"))
	var got, want []string
	for _, r := range rows {
		got = append(got, strings.Join(r, " | "))
	}
	tick := func(ss []string) string {
		var out []string
		for _, s := range ss {
			out = append(out, "`"+s+"`")
		}
		return strings.Join(out, ", ")
	}
	for _, l := range layers {
		imports := strings.Join(l.imports, ", ")
		if imports == "" {
			imports = "none"
		}
		want = append(want, strings.Join([]string{l.name, tick(l.packages), imports}, " | "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("design.md's layer table differs from docs/layers_test.go's layers; it should read:\n%s",
			"| "+strings.Join(want, " |\n| ")+" |")
	}
}

// anchor is the fragment GitHub gives a heading: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinksToHeadingsResolve fails when README.md or a page of docs/
// links to a heading (`(#fragment)`, or `(page.md#fragment)` between the
// pages) that is not there, as after a heading is renamed or a section
// moves, or to a page or repository file that does not exist.
func TestLinksToHeadingsResolve(t *testing.T) {
	texts := manual(t)
	anchors := map[string]map[string]bool{}
	for file, text := range texts {
		anchors[file] = map[string]bool{}
		fence := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if m := regexp.MustCompile(`^#+ (.+)$`).FindStringSubmatch(line); m != nil && !fence {
				anchors[file][anchor(m[1])] = true
			}
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]*)\)`)
	n := 0
	for file, text := range texts {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, frag, _ := strings.Cut(target, "#")
			page := file
			if path != "" {
				page = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(filepath.Join("..", page)); err != nil {
					t.Errorf("%s links to %s, which does not exist", file, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if a, ok := anchors[page]; !ok || !a[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", file, target, page, frag)
			}
		}
	}
	if n == 0 {
		t.Error("no link found: is the pattern reading the pages?")
	}
}
