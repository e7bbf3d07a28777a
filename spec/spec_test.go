package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/schemas"
)

// TestExamples validates every example under examples/: none may have an
// error. SKILL.md files written for other products may warn.
func TestExamples(t *testing.T) {
	files, diags := ValidateFiles([]string{filepath.Join("..", "examples")}, false)
	if len(files) < 6 {
		t.Errorf("validated %d example files, want at least 6: %v", len(files), files)
	}
	for _, d := range diags.Errors(false) {
		t.Errorf("%s", d)
	}
}

func TestLoadSkillYAML(t *testing.T) {
	s, diags := LoadSkill(filepath.Join("..", "examples", "skills", "weekly-report", "weekly-report.skill.yaml"))
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	if s.ID != "weekly-report" || s.Version != "1.2.0" || s.Channel != ChannelHandle || s.Format != FormatYAML {
		t.Errorf("got id %q version %q channel %q format %q", s.ID, s.Version, s.Channel, s.Format)
	}
	if !strings.HasPrefix(s.Instructions, "# Weekly report") {
		t.Errorf("instructions-file not read: %.40q", s.Instructions)
	}
	var kinds []string
	for _, tool := range s.Tools {
		kinds = append(kinds, string(tool.Run.Kind)+":"+tool.Run.Op)
	}
	if diff := cmp.Diff([]string{"command:", "reply:", "state:set", "state:get", "store:set"}, kinds); diff != "" {
		t.Errorf("run kinds (-want +got):\n%s", diff)
	}
	fetch := s.Tools[0]
	if fetch.Run.Timeout != 30*time.Second || !cmp.Equal(fetch.Run.Command, []string{"./scripts/fetch.sh", "{{.week}}"}) || !cmp.Equal(fetch.Run.Env, []string{"SALES_LEDGER"}) {
		t.Errorf("fetch run: %+v", fetch.Run)
	}
	if fetch.Input["type"] != "object" {
		t.Errorf("fetch input: %v", fetch.Input)
	}
	if p := fetch.At("run"); p.Line != 20 || p.Col != 7 {
		t.Errorf("position of tools[0].run = %v, want line 20 col 7", p)
	}

	want := []Agent{
		{Name: "extractor", Visibility: VisibilitySub, Flow: Flow{Policy: FlowNone}, Tools: []string{"fetch_sales"}, MaxSteps: 6, Timeout: 2 * time.Minute, Retries: 1},
		{Name: "summarizer", ContextSupply: "conversation", Turns: 4, Visibility: VisibilitySub, Flow: Flow{Policy: FlowDeps, Tools: []string{"fetch_sales"}, MaxTokens: 4000}, Tools: []string{"report_template", "save_brief"}, MaxSteps: 8, Timeout: 2 * time.Minute},
		{Name: "auditor", Visibility: VisibilityPrimary, Flow: Flow{Policy: FlowRecent, Last: 4}, MaxSteps: 5},
	}
	got := make([]Agent, len(s.Agents))
	for i, a := range s.Agents {
		a.Node, a.Description, a.Prompt, a.ToolsPos = Node{}, "", "", nil
		got[i] = a
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
}

func TestLoadSkillMD(t *testing.T) {
	s, diags := LoadSkill(filepath.Join("..", "examples", "skills", "pdf-forms", "SKILL.md"))
	if len(diags.Errors(false)) != 0 {
		t.Fatalf("errors: %v", diags)
	}
	if len(diags) != 0 {
		t.Errorf("Claude Code's keys (user-invocable, argument-hint) are known: want no warnings, got %v", diags)
	}
	if s.ID != "pdf-forms" || s.Name != "pdf-forms" || s.Version != "" || s.Format != FormatSkillMD {
		t.Errorf("got id %q name %q version %q format %q", s.ID, s.Name, s.Version, s.Format)
	}
	if len(s.Instructions) < 70_000 || !strings.HasPrefix(s.Instructions, "# PDF forms") {
		t.Errorf("body: %d bytes, starts %.20q", len(s.Instructions), s.Instructions)
	}
	if diff := cmp.Diff([]string{"Bash(python3:*)", "Bash(qpdf:*)", "Read", "Write"}, s.AllowedTools); diff != "" {
		t.Errorf("allowed-tools string form (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"author": "acme-docs", "version": "3.1", "category": "documents"}, s.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"LICENSE.txt", "reference.md", "scripts/fill_form.py"}, s.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(s.License, "Apache-2.0") || s.Compatibility == "" {
		t.Errorf("license %q compatibility %q", s.License, s.Compatibility)
	}

	m, _ := LoadSkill(filepath.Join("..", "examples", "skills", "meeting-notes", "SKILL.md"))
	if diff := cmp.Diff([]string{"Read", "Write", "Bash(date:*)"}, m.AllowedTools); diff != "" {
		t.Errorf("allowed-tools list form (-want +got):\n%s", diff)
	}
}

func TestLoadWorkflow(t *testing.T) {
	p, diags := LoadProject(filepath.Join("..", "examples", "pipeline.workflow.yaml"))
	if len(diags.Errors(false)) != 0 {
		t.Fatalf("errors: %v", diags)
	}
	w := p.Workflow
	if w.Host != nil || w.EnabledSet || len(w.Tasks) != 5 || w.Limits.Concurrency != 2 {
		t.Errorf("workflow: host %v enabledSet %v tasks %d limits %+v", w.Host, w.EnabledSet, len(w.Tasks), w.Limits)
	}
	var ids []string
	for _, s := range p.Skills {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"weekly-report", "brand-voice"}, ids); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	audit := w.Tasks[3]
	if len(audit.DepsPos) != 3 || audit.DepsPos[1].Line != audit.At("deps").Line {
		t.Errorf("deps positions: %v", audit.DepsPos)
	}
}

func TestEnabledEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.workflow.yaml")
	if err := os.WriteFile(path, []byte("name: w\nenabled: []\nhost: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, diags := LoadWorkflow(path)
	if len(diags) != 0 || !w.EnabledSet || len(w.Enabled) != 0 {
		t.Errorf("enabled: [] → set %v, list %v, diags %v", w.EnabledSet, w.Enabled, diags)
	}
}

func TestDiscover(t *testing.T) {
	skills, diags := Discover([]string{filepath.Join("..", "examples", "skills")})
	if len(diags.Errors(false)) != 0 {
		t.Fatalf("errors: %v", diags)
	}
	var ids []string
	for _, s := range skills {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"brand-voice", "meeting-notes", "pdf-forms", "weekly-report"}, ids); diff != "" {
		t.Errorf("discovered (-want +got):\n%s", diff)
	}
	_, diags = Discover([]string{"no/such/folder"})
	if len(diags) != 1 || diags[0].Pos.Line != 1 {
		t.Errorf("missing path: %v", diags)
	}
}

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"a", true}, {"weekly-report", true}, {"v2-x9", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"-a", false}, {"a-", false}, {"a--b", false},
		{"A", false}, {"a_b", false}, {"a b", false}, {"a.b", false}, {"a/b", false},
		// skills-ref's own cases: lowercase letters of any script, after NFKC.
		{"技能", true}, {"мой-навык", true}, {"café", true}, {"cafe\u0301", true}, {"é", true},
		{"МОЙ-НАВЫК", false}, {"Café", false}, {"ÄPFEL", false}, {strings.Repeat("é", 64), true}, {strings.Repeat("é", 65), false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestValidSemver(t *testing.T) {
	for v, want := range map[string]bool{
		"1.2.0": true, "0.0.0": true, "1.0.0-rc.1": true, "1.0.0+build.5": true,
		"1.2": false, "01.2.3": false, "1.2.x": false, "v1.2.3": false, "": false,
	} {
		if got := ValidSemver(v); got != want {
			t.Errorf("ValidSemver(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCheckCycleOrder(t *testing.T) {
	// The same cycle written in another order prints from the earliest task.
	w := &Workflow{Tasks: []Task{
		{ID: "z", Deps: []string{"m"}},
		{ID: "m", Deps: []string{"a"}},
		{ID: "a", Deps: []string{"z"}},
	}}
	got := Check(w, nil)
	want := diag.List{{Kind: "cycle", Message: `dependency cycle: "z" -> "m" -> "a" -> "z"`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"deps", "goal", "max-steps", "item-visibility"}
	for key, want := range map[string]string{
		"dependson": "deps", "depends_on": "deps", "goel": "goal", "maxSteps": "max-steps",
		"max_steps": "max-steps", "visibility": "item-visibility", "zzzzzz": "",
	} {
		if got := suggest(key, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}

// `cache:` is on by default; off (or false) turns prompt caching off.
func TestCacheKey(t *testing.T) {
	for _, tc := range []struct {
		line    string
		noCache bool
	}{{"", false}, {"cache: on\n", false}, {"cache: off\n", true}, {"cache: false\n", true}, {"cache: true\n", false}} {
		path := filepath.Join(t.TempDir(), "w.workflow.yaml")
		if err := os.WriteFile(path, []byte("name: w\n"+tc.line+"host: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		w, diags := LoadWorkflow(path)
		if len(diags) != 0 || w.NoCache != tc.noCache {
			t.Errorf("%q: NoCache %v, want %v (diags %v)", tc.line, w.NoCache, tc.noCache, diags)
		}
	}
}

// An executable file under scripts/ that run_skill_script could not start
// (no #! line, not a native program, no interpreter by extension) is a
// warning at the file; data files and scripts that can start are not.
func TestSkillScriptCannotStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sheets")
	for name, f := range map[string]struct {
		body string
		mode os.FileMode
	}{
		"SKILL.md":           {"---\nname: sheets\ndescription: d\n---\nRun scripts/run.\n", 0o644},
		"scripts/run":        {"echo hi\n", 0o755},
		"scripts/recalc.py":  {"print('hi')\n", 0o755},
		"scripts/bang":       {"#!/bin/sh\necho hi\n", 0o755},
		"scripts/schema.xsd": {"<xs:schema/>\n", 0o644},
		"scripts/native":     {"\x7fELF\x02\x01\x01", 0o755},
		"docs/not-a-script":  {"echo hi\n", 0o755},
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	_, diags := LoadSkill(filepath.Join(dir, "SKILL.md"))
	var got []string
	for _, d := range diags {
		if d.Kind == "script" {
			got = append(got, d.String())
		}
	}
	want := filepath.Join(dir, "scripts", "run") + ":1:1: warning: run cannot be started"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "add a #! line") {
		t.Errorf("script warnings %q, want one starting %q", got, want)
	}
	if diags.Err() != nil {
		t.Errorf("a warning failed the load: %v", diags)
	}
}

// Every message about an invalid id states IDRule, the rule ValidID
// applies, and the schema describes ids with the same words: an agent's
// name, a skill's id, a SKILL.md's name and an MCP server's name alike.
// An id the rule allows (技能) loads.
func TestIDRuleIsOneSource(t *testing.T) {
	write := func(rel, text string) string {
		return filepath.Join(writeTree(t, map[string]string{rel: text}), filepath.FromSlash(rel))
	}
	bad := write("bad.skill.yaml", "id: Bad_Id\nname: b\ndescription: d\nversion: 1.0.0\ninstructions: x\n"+
		"mcp:\n  Bad_Server: {command: x}\nagents:\n  Writer: {prompt: p}\n")
	_, diags := LoadSkill(bad)
	for _, want := range []string{`"Bad_Id"`, `"Bad_Server"`, `"Writer"`} {
		found := false
		for _, d := range diags {
			if strings.Contains(d.Message, want) {
				found = true
				if !strings.Contains(d.Message+d.Hint, IDRule) {
					t.Errorf("%s does not state IDRule", d)
				}
			}
		}
		if !found {
			t.Errorf("no diagnostic names %s: %v", want, diags)
		}
	}
	_, diags = LoadSkill(write("Bad/SKILL.md", "---\nname: Bad\ndescription: d\n---\nbody\n"))
	if len(diags) == 0 || !strings.Contains(diags[0].Hint, IDRule) {
		t.Errorf("SKILL.md bad name: %v", diags)
	}
	s, diags := LoadSkill(write("技能/SKILL.md", "---\nname: 技能\ndescription: d\n---\nbody\n"))
	if s == nil || s.ID != "技能" || len(diags) > 0 {
		t.Errorf("技能 did not load: %v", diags)
	}
	var sch struct {
		Defs struct {
			ID struct{ Description string } `json:"id"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schemas.Skill(), &sch); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sch.Defs.ID.Description, IDRule) {
		t.Errorf("the schema describes ids as %q, not by IDRule", sch.Defs.ID.Description)
	}
}
