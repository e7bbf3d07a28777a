package runrecord_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
)

// TestReadAnswered: the answers a run acted on are approvals.jsonl's
// "answered" lines, in order; requests, lines that do not decode and a
// torn last line are not answers, and a record without the file has none.
func TestReadAnswered(t *testing.T) {
	dir := t.TempDir()
	if got, err := runrecord.ReadAnswered(dir); err != nil || len(got) != 0 {
		t.Fatalf("no file: %v, %v; want none", got, err)
	}
	lines := `{"kind":"requested","call":"host/s1/c1","tool":"deploy"}
{"kind":"answered","call":"host/s1/c1","tool":"deploy","answer":{"call":"host/s1/c1","decision":"approved"}}
not json
{"kind":"answered","call":"host/s2/c1","tool":"deploy"}

{"kind":"answered","call":"task:a/s1/c1","tool":"rm","answer":{"call":"task:a/s1/c1","decision":"rejected"}}
{"kind":"answered","call":"host/s3/c1","tool":"deploy","answer":{"call":"host/s3/c1","decis`
	if err := os.WriteFile(filepath.Join(dir, runrecord.ApprovalsFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := runrecord.ReadAnswered(dir)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range got {
		calls = append(calls, l.Call+" "+l.Tool+" "+l.Answer.Decision)
	}
	want := []string{"host/s1/c1 deploy approved", "task:a/s1/c1 rm rejected"}
	if len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] {
		t.Errorf("ReadAnswered = %q, want %q", calls, want)
	}
}
