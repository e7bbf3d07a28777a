package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaCmd(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		id   string // the printed schema's $id suffix, or a stderr substring
	}{
		{[]string{"schema", "skill"}, exitOK, "skill.schema.json"},
		{[]string{"schema", "workflow"}, exitOK, "workflow.schema.json"},
		{[]string{"schema", "skill-md"}, exitOK, "skill-md.schema.json"},
		{[]string{"schema", "script"}, exitOK, "script.schema.json"},
		{[]string{"schema"}, exitUsage, "name one schema: skill, workflow, script, eval, or skill-md"},
		{[]string{"schema", "task"}, exitUsage, `unknown schema "task"`},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		if code != exitOK {
			if !strings.Contains(stderr, tc.id) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, tc.id)
			}
			continue
		}
		var doc struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || !strings.HasSuffix(doc.ID, tc.id) {
			t.Errorf("%v: $id %q, err %v", tc.args, doc.ID, err)
		}
	}
}
