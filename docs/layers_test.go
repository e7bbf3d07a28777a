package docs

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path go list prints before every package.
const module = "github.com/fsdrun/fsd/"

// layer is a group of the module's packages and the layers its packages
// may import. A package may import a package of its own layer only when
// the layer lists itself.
type layer struct {
	name     string
	packages []string // paths relative to the module; "x/..." is x and everything under it
	imports  []string // layers
}

// layers are the module's layers, bottom up: a package imports only what
// its layer allows, so what a part knows stays small and a change below
// does not reach through. docs/design.md, "Layers", says why each
// boundary is where it is.
//
// N2: transports sit beside the engine and may not import it.
var layers = []layer{
	{name: "leaf", packages: []string{"diag", "tokens/...", "journal", "output", "model", "internal/...", "scaffold", "examples/..."}},
	{name: "confinement", packages: []string{"internal/proc", "internal/sandbox", "internal/egress"}, imports: []string{"leaf", "confinement"}},
	{name: "providers", packages: []string{"model/..."}, imports: []string{"leaf", "providers"}},
	{name: "records", packages: []string{"event", "transcript", "schemas"}, imports: []string{"leaf"}},
	{name: "spec", packages: []string{"spec"}, imports: []string{"leaf", "confinement", "records"}},
	{name: "parts", packages: []string{"artifact", "board", "supply", "visibility", "tool", "mcptool", "trust", "runrecord", "mcpserve", "work", "approval", "workspace"},
		imports: []string{"leaf", "confinement", "records", "spec", "parts"}},
	{name: "engine", packages: []string{"engine"}, imports: []string{"leaf", "confinement", "records", "spec", "parts"}},
	{name: "transports", packages: []string{"natsboard"}, imports: []string{"leaf", "confinement", "records", "spec", "parts"}},
	{name: "observers", packages: []string{"telemetry", "ui", "view"}, imports: []string{"leaf", "confinement", "records", "spec", "parts", "engine"}},
	{name: "servers", packages: []string{"serve/..."}, imports: []string{"leaf", "confinement", "records", "spec", "parts", "engine", "observers", "servers"}},
	{name: "harness", packages: []string{"eval"}, imports: []string{"leaf", "confinement", "records", "spec", "parts", "engine"}},
	{name: "top", packages: []string{"cmd/...", "docs"}, imports: []string{"leaf", "confinement", "providers", "records", "spec", "parts", "engine", "transports", "observers", "servers", "harness"}},
}

// allowedExceptions are imports the layers forbid that the code still
// makes, each with the reason it is tolerated. An entry the code no
// longer needs fails the test, so it is deleted when its import goes.
var allowedExceptions = map[string]string{}

// layerOf returns the layer of pkg (relative to the module): the layer
// with the most specific pattern that matches it.
func layerOf(pkg string) (string, bool) {
	best, bestLen := "", -1
	for _, l := range layers {
		for _, p := range l.packages {
			root, tree := strings.CutSuffix(p, "/...")
			if pkg == root || tree && strings.HasPrefix(pkg, root+"/") {
				if len(root) > bestLen {
					best, bestLen = l.name, len(root)
				}
			}
		}
	}
	return best, bestLen >= 0
}

// moduleImports returns each package of the module, relative to it, with
// the module's packages it imports (not its tests).
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(gobin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		graph[pkg] = []string{}
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages: is it running in the module?", len(graph))
	}
	return graph
}

// TestLayers: every package of the module is in a layer, and imports only
// packages of the layers its layer allows (or an allowed exception). A
// failure names the import and the rule it breaks.
func TestLayers(t *testing.T) {
	graph := moduleImports(t)
	allowed := map[string][]string{}
	for _, l := range layers {
		allowed[l.name] = l.imports
	}
	used := map[string]bool{}
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		from, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s is in no layer: add it to docs/layers_test.go's layers (and to docs/design.md's package table)", pkg)
			continue
		}
		for _, imp := range graph[pkg] {
			to, ok := layerOf(imp)
			if !ok || slices.Contains(allowed[from], to) {
				continue
			}
			edge := pkg + " -> " + imp
			if _, ok := allowedExceptions[edge]; ok {
				used[edge] = true
				continue
			}
			t.Errorf("%s imports %s: %s is in layer %s, which may import only %s; %s is in layer %s",
				pkg, imp, pkg, from, orNothing(allowed[from]), imp, to)
		}
	}
	for edge, why := range allowedExceptions {
		if !used[edge] {
			t.Errorf("allowed exception %q (%s) is not needed any more: delete it from allowedExceptions", edge, why)
		}
	}
}

func orNothing(layers []string) string {
	if len(layers) == 0 {
		return "nothing of the module"
	}
	return strings.Join(layers, ", ")
}
