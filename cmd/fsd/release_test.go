package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/spec"
)

// stampVars are the variables of version.go a release build sets with
// -ldflags -X. The linker ignores -X for a name that does not exist, so
// TestVersionStampedByLinker proves these names work and the tests below
// hold .goreleaser.yaml and scripts/release.sh to the same names.
var stampVars = []string{"main.version", "main.commit", "main.date"}

// xNames lists the variables an ldflags string sets with -X.
func xNames(ldflags string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`-X ([\w./]+)=`).FindAllStringSubmatch(ldflags, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// .goreleaser.yaml and scripts/release.sh (what CI runs) build the same
// package for the same targets, stamp the same variables and pack the
// same files.
func TestGoreleaserAndReleaseScriptAgree(t *testing.T) {
	var gr struct {
		Version int
		Builds  []struct {
			Main, Binary string
			Env, Goos    []string
			Goarch       []string
			Flags        []string
			Ldflags      []string
		}
		Archives []struct {
			NameTemplate string `yaml:"name_template"`
			Files        []string
		}
	}
	if err := yaml.Unmarshal(readRepoFile(t, ".goreleaser.yaml"), &gr); err != nil {
		t.Fatal(err)
	}
	if gr.Version != 2 || len(gr.Builds) != 1 || len(gr.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: want version 2, one build and one archive, got %+v", gr)
	}
	b, a := gr.Builds[0], gr.Archives[0]
	if b.Main != "./cmd/fsd" || b.Binary != "fsd" {
		t.Errorf(".goreleaser.yaml builds %s as %s, want ./cmd/fsd as fsd", b.Main, b.Binary)
	}
	var grTargets []string
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			grTargets = append(grTargets, goos+"/"+goarch)
		}
	}
	slices.Sort(grTargets)
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}; !slices.Equal(grTargets, want) {
		t.Errorf(".goreleaser.yaml targets %v, want %v", grTargets, want)
	}
	want := slices.Sorted(slices.Values(stampVars))
	if got := xNames(strings.Join(b.Ldflags, " ")); !slices.Equal(got, want) {
		t.Errorf(".goreleaser.yaml stamps %v, want %v", got, want)
	}

	script := string(readRepoFile(t, "scripts/release.sh"))
	m := regexp.MustCompile(`targets="\$\{FSD_TARGETS:-([^}]*)\}"`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("scripts/release.sh: no targets=\"${FSD_TARGETS:-…}\" line")
	}
	if got := slices.Sorted(slices.Values(strings.Fields(m[1]))); !slices.Equal(got, grTargets) {
		t.Errorf("scripts/release.sh targets %v, .goreleaser.yaml %v", got, grTargets)
	}
	m = regexp.MustCompile(`ldflags="([^"]*)"`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal(`scripts/release.sh: no ldflags="…" line`)
	}
	if got := xNames(m[1]); !slices.Equal(got, want) {
		t.Errorf("scripts/release.sh stamps %v, want %v", got, want)
	}
	for _, flag := range append(slices.Clone(b.Flags), b.Env...) {
		if !strings.Contains(script, flag) {
			t.Errorf("scripts/release.sh lacks %s, which .goreleaser.yaml sets", flag)
		}
	}
	if a.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" || !strings.Contains(script, `name="fsd_${version#v}_${goos}_${goarch}"`) {
		t.Errorf("archive names differ: .goreleaser.yaml %q; scripts/release.sh must name fsd_${version#v}_${goos}_${goarch}", a.NameTemplate)
	}
	if files := strings.Join(a.Files, " "); !strings.Contains(script, `"$exe" `+files) {
		t.Errorf("scripts/release.sh does not pack %s, as .goreleaser.yaml does", files)
	}
}

// runLines returns the lines of a step's run script that start with prefix.
func runLines(run, prefix string) []string {
	var lines []string
	for line := range strings.Lines(run) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, prefix) {
			lines = append(lines, line)
		}
	}
	return lines
}

// action.yml installs this repository's cmd/fsd and runs a command line
// the CLI accepts: run through fsd's own parser, it validates the examples
// and writes a bad manifest's problems as GitHub annotations.
func TestActionRunsFsdValidate(t *testing.T) {
	t.Parallel()
	type step struct {
		Uses, Name, Run string
		Dir             string `yaml:"working-directory"`
		Env             map[string]string
	}
	var action struct {
		Inputs map[string]struct{ Default string }
		Runs   struct {
			Using string
			Steps []step
		}
	}
	raw := readRepoFile(t, "action.yml")
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$\{\{\s*inputs\.([\w-]+)\s*\}\}`).FindAllStringSubmatch(string(raw), -1) {
		if _, ok := action.Inputs[m[1]]; !ok {
			t.Errorf("action.yml uses inputs.%s, which it does not declare", m[1])
		}
	}
	if action.Runs.Using != "composite" {
		t.Fatalf("action.yml runs using %q, want composite", action.Runs.Using)
	}
	var installs, validates []string
	var validateEnv map[string]string
	for _, s := range action.Runs.Steps {
		for _, l := range runLines(s.Run, "") {
			if strings.Contains(l, "go install ./cmd/fsd") && s.Dir == "${{ github.action_path }}" {
				installs = append(installs, l)
			}
		}
		if l := runLines(s.Run, "fsd "); len(l) > 0 {
			validates, validateEnv = append(validates, l...), s.Env
		}
	}
	if len(installs) != 1 {
		t.Errorf("action.yml: want one `go install ./cmd/fsd` in ${{ github.action_path }}, got %q", installs)
	}
	if len(validates) != 1 {
		t.Fatalf("action.yml: want one fsd command line, got %q", validates)
	}
	if validateEnv["FSD_PATHS"] != "${{ inputs.paths }}" || validateEnv["FSD_STRICT"] != "${{ inputs.strict }}" {
		t.Errorf("action.yml: the fsd step's env is %v", validateEnv)
	}
	// The shell's word splitting, with the inputs in place.
	argv := func(line, strict, paths string) []string {
		line = strings.ReplaceAll(line, "$strict", strict)
		line = strings.ReplaceAll(line, "$FSD_PATHS", paths)
		return strings.Fields(line)[1:]
	}
	examples := "../../examples ../../scaffold/templates/hello"
	for _, strict := range []string{"", "--strict"} {
		args := argv(validates[0], strict, examples)
		if !slices.Contains(args, "validate") || !strings.Contains(strings.Join(args, " "), "--format github") {
			t.Errorf("action.yml runs fsd %v, want validate --format github", args)
		}
		if code, out, errs := fsd(t, args...); code != exitOK || out != "" {
			t.Errorf("fsd %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	args := argv(validates[0], "", "../../spec/testdata/bad/bad-agent-model.skill.yaml")
	if code, out, _ := fsd(t, args...); code != exitProblems || !strings.HasPrefix(out, "::error file=../../spec/testdata/bad/bad-agent-model.skill.yaml,line=") {
		t.Errorf("fsd %v on a bad skill: exit %d, stdout %q", args, code, out)
	}
}

// .pre-commit-hooks.yaml runs the binary pre-commit's `go install ./...`
// builds from cmd/fsd, on exactly the files fsd reads as skills, workflows
// and scripts, and that entry accepts the files it is given.
func TestPreCommitHook(t *testing.T) {
	t.Parallel()
	var hooks []struct {
		ID, Entry, Language, Files string
		PassFilenames              *bool `yaml:"pass_filenames"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, ".pre-commit-hooks.yaml"), &hooks); err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].ID != "fsd-validate" || hooks[0].Language != "golang" {
		t.Fatalf("want one golang hook fsd-validate, got %+v", hooks)
	}
	h := hooks[0]
	// go install names a binary after its package's folder.
	entry := strings.Fields(h.Entry)
	if pkg, _ := filepath.Abs("."); len(entry) < 2 || entry[0] != filepath.Base(pkg) || entry[1] != "validate" {
		t.Fatalf("entry %q, want %s validate", h.Entry, filepath.Base(pkg))
	}
	if h.PassFilenames != nil && !*h.PassFilenames {
		t.Errorf("pass_filenames is false; fsd validate needs the files")
	}
	files, err := regexp.Compile(h.Files) // pre-commit's re.search; this syntax means the same in Go
	if err != nil {
		t.Fatal(err)
	}
	var names, manifests []string
	for _, root := range []string{"../../examples", "../../scaffold/templates", "../../spec/testdata"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, filepath.ToSlash(path))
			}
			return err
		})
	}
	names = append(names, "skill.yaml", "workflow.yml", "a/b.script.yml", "SKILL.md", "NOT_SKILL.md",
		"docker-compose.yaml", "skill.yaml.bak", "my.skill.yaml/README.md")
	for _, name := range names {
		want := spec.IsSkillFile(name) || spec.IsWorkflowFile(name) || spec.IsScriptFile(name)
		if got := files.MatchString(name); got != want {
			t.Errorf("files %s: %s matches %v, want %v", h.Files, name, got, want)
		}
		if want && strings.HasPrefix(name, "../../examples/") {
			manifests = append(manifests, name)
		}
	}
	if len(manifests) < 10 {
		t.Fatalf("only %d manifests under examples/", len(manifests))
	}
	if code, _, errs := fsd(t, append(entry[1:], manifests...)...); code != exitOK {
		t.Errorf("%s on the examples' manifests: exit %d: %s", h.Entry, code, errs)
	}
}
