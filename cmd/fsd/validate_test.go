package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/golden"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

const badSkill = "../../spec/testdata/bad/unknown-key.skill.yaml"

func TestValidateExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string // a substring of stdout+stderr
	}{
		{"valid", []string{"validate", "../../examples"}, exitOK, "0 errors, 0 warnings"},
		{"Claude Code keys", []string{"validate", "../../examples/skills/pdf-forms"}, exitOK, "1 file, 0 errors, 0 warnings"},
		{"warnings only", []string{"validate", "../../spec/testdata/bad/id-folder-mismatch"}, exitOK, "1 file, 0 errors, 1 warning"},
		{"strict", []string{"validate", "--strict", "../../spec/testdata/bad/id-folder-mismatch"}, exitProblems, "1 file, 1 error, 0 warnings"},
		{"problems", []string{"validate", badSkill}, exitProblems, "1 file, 7 errors, 0 warnings"},
		{"no paths", []string{"validate"}, exitUsage, "give at least one file or folder"},
		{"bad format", []string{"validate", "--format", "xml", badSkill}, exitUsage, `unknown --format "xml"`},
		{"bad flag", []string{"validate", "--nope", badSkill}, exitUsage, "unknown flag"},
		{"missing path", []string{"validate", "../../examples", "no/such/file.skill.yaml"}, exitUsage, "fsd: no/such/file.skill.yaml: no such file or folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.err) {
				t.Errorf("output %q does not contain %q", stdout+stderr, tc.err)
			}
		})
	}
}

func TestValidateFormats(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json", "github", "sarif"} {
		t.Run(format, func(t *testing.T) {
			_, stdout, _ := runCLI(t, "validate", "--format", format, badSkill, "../../spec/testdata/bad/skillmd-foreign")
			golden.CheckString(t, filepath.Join("testdata", "validate."+format+".golden"), stdout)
			if format == "json" || format == "sarif" {
				var v any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("not JSON: %v", err)
				}
			}
		})
	}
}

func TestTextSourceLine(t *testing.T) {
	var b bytes.Buffer
	diags := diag.List{diag.Errorf(diag.Pos{File: badSkill, Line: 9, Col: 22}, "unknown-key", `unknown key "timout"`)}
	if err := writeText(&b, diags, true); err != nil {
		t.Fatal(err)
	}
	want := badSkill + `:9:22: unknown key "timout" [unknown-key]
        run: {reply: ok, timout: 3s}
                         ^
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
