package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/schemas"
)

// A 1 MiB string anchored in a tool's input and aliased 1,000 times is a
// 1 MiB file that names a gigabyte of schema. Loading it stops at the
// alias that passes schemas.MaxAliasBytes, with its line and column, and
// costs a few megabytes: converting the tree shares the string rather
// than copying it, and the schema size check stops counting at its limit,
// so a broken alias bound fails the assertions here, not the machine.
func TestAliasedBigStringStopsAtItsAlias(t *testing.T) {
	const aliases = 1000
	var b strings.Builder
	b.WriteString("id: big\nname: Big\ndescription: One string, many times.\nversion: 1.0.0\n")
	b.WriteString("tools:\n  - name: big\n    run: {reply: ok}\n    input:\n      type: object\n")
	b.WriteString("      description: &big " + strings.Repeat("x", 1<<20) + "\n      properties:\n")
	for i := range aliases {
		fmt.Fprintf(&b, "        p%d: {type: string, description: *big}\n", i)
	}
	path := filepath.Join(t.TempDir(), "big.skill.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, diags := LoadSkill(path)
	runtime.ReadMemStats(&after)
	// The anchor counts as it is reached through each alias: the fifth,
	// p4's, passes 4 MiB. Its line is 12 + 4, and its column is after
	// "        p4: {type: string, description: ".
	want := fmt.Sprintf("%s:16:41: aliases repeat more than %d bytes (4 MiB) of text; a large value aliased many times?", path, schemas.MaxAliasBytes)
	if len(diags) != 1 || diags[0].Kind != "yaml" || diags[0].Pos.String()+": "+diags[0].Message != want {
		t.Fatalf("diagnostics:\n%v\nwant one:\n%s", diags, want)
	}
	if diags[0].Hint == "" {
		t.Error("no hint")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("loading allocated %d MiB; want a few", got>>20)
	}
}

// Every kind of file goes through the same bound: a skill, a SKILL.md's
// frontmatter, a workflow and a scripted model's script.
func TestAliasBytesBoundEveryKind(t *testing.T) {
	big := "&big " + strings.Repeat("y", 1<<20)
	aliases := strings.TrimSuffix(strings.Repeat("*big, ", 5), ", ")
	dir := t.TempDir()
	files := map[string]string{
		"a.skill.yaml":    "id: a\nname: A\ndescription: " + big + "\nversion: 1.0.0\nmetadata: {list: [" + aliases + "]}\n",
		"b/SKILL.md":      "---\nname: b\ndescription: " + big + "\nmetadata: {list: [" + aliases + "]}\n---\nBody.\n",
		"c.workflow.yaml": "name: c\nmodel: scripted\ninput: " + big + "\nhost: {prompt: [" + aliases + "]}\n",
		"d.script.yaml":   "host:\n  - say: " + big + "\n  - say: [" + aliases + "]\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		diags := ValidatePaths([]string{path}, false)
		found := false
		for _, d := range diags {
			found = found || d.Kind == "yaml" && strings.Contains(d.Message, "aliases repeat more than") && d.Pos.File == path
		}
		if !found {
			t.Errorf("%s: no alias bound error in %v", name, diags)
		}
	}
}

// A tool's description is bounded by MaxToolDescription bytes, reported
// at the description.
func TestToolDescriptionLimit(t *testing.T) {
	for _, n := range []int{MaxToolDescription, MaxToolDescription + 1} {
		path := filepath.Join(t.TempDir(), "d.skill.yaml")
		text := "id: d\nname: D\ndescription: Long tool text.\nversion: 1.0.0\ntools:\n  - name: t\n    run: {reply: ok}\n    description: " + strings.Repeat("z", n) + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := LoadSkill(path)
		errs := diags.Errors(false)
		if n <= MaxToolDescription && len(errs) != 0 {
			t.Errorf("%d bytes: %v", n, errs)
		}
		want := fmt.Sprintf("%s:8:18: tool description is %d bytes, over the %d-byte (16 KiB) limit", path, n, MaxToolDescription)
		if n > MaxToolDescription && (len(errs) != 1 || !strings.HasPrefix(errs[0].String(), want)) {
			t.Errorf("%d bytes: %v; want one error starting %q", n, errs, want)
		}
	}
}

// jsonSize is close to encoding/json's length for text without escapes,
// and stops early past its limit.
func TestJSONSize(t *testing.T) {
	v := map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "integer", "minimum": int64(-3), "maximum": 2.5},
		"s": map[string]any{"type": "string", "enum": []any{"a", "b", nil, true}},
	}, "required": []any{"n"}}
	b, _ := json.Marshal(v)
	if got := jsonSize(v, 1<<20); got < len(b) || got > len(b)+8 {
		t.Errorf("jsonSize = %d, json.Marshal length %d", got, len(b))
	}
	if got := jsonSize(v, 10); got > 10+len(`"properties":`)+len(`"object"`)+8 {
		t.Errorf("jsonSize with limit 10 = %d: it went on counting", got)
	}
}
