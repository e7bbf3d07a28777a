package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/tool"
)

// A secret in a workspace file (a .env, a config of one long line) that
// Read's or Grep's cut of a long line would split is masked whole before
// the cut: the run masks a result once it is returned, and by then a
// secret's first part is no longer recognised.
func TestLongLineCutLeavesNoPartOfASecret(t *testing.T) {
	const key = "sk-test-5ecret-0123456789abcdef"
	files := map[string]string{
		// The key across the cut at MaxLineChars.
		"cfg.json": strings.Repeat("x", MaxLineChars-10) + key + " tail\n",
		// A line of keys longer than what Read keeps of a line: masking
		// shortens it, and the kept part ends inside a key.
		"keys.txt": strings.Repeat(key+" ", 2*(MaxLineChars+lineSlack)/len(key)) + "tail\n",
	}
	f := newFixture(t)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mask := tool.WithMask(redact.NewSet(key).String)
	for _, c := range []struct{ tool, args string }{
		{"Read", `{"file_path":"cfg.json"}`},
		{"Read", `{"file_path":"keys.txt"}`},
		{"Grep", `{"pattern":"tail","output_mode":"content"}`},
	} {
		tl, err := NewTool(c.tool, f.ws, nil, mask)
		if err != nil {
			t.Fatal(err)
		}
		res := tl.Call(context.Background(), json.RawMessage(c.args))
		if res.IsError || !strings.Contains(res.Text, "[line cut]") {
			t.Fatalf("%s %s: want a cut line, got %q", c.tool, c.args, res.Text[:min(len(res.Text), 200)])
		}
		for i := 0; i+5 <= len(key); i++ {
			if strings.Contains(res.Text, key[i:i+5]) {
				t.Errorf("%s %s: part of the key, %q, is in the result", c.tool, c.args, key[i:i+5])
				break
			}
		}
	}
}
