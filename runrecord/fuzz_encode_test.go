package runrecord

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendLine: for any line, requests.jsonl gets what json.Marshal
// writes, or nothing where it fails.
func FuzzAppendLine(f *testing.F) {
	for _, s := range jsonw.Seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Line
		jsonw.Vary(&l, data)
		want, err := json.Marshal(l)
		if err == nil {
			want = append(want, '\n')
		}
		if got := appendLine(nil, &l); string(got) != string(want) {
			t.Fatalf("appendLine\n got %.300s\nwant %.300s (%v)", got, want, err)
		}
	})
}

// FuzzAppendBoard: for any task, board.json's line is what json.Marshal
// writes, and the appender fails where it fails.
func FuzzAppendBoard(f *testing.F) {
	for _, s := range jsonw.Seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var task board.Task
		jsonw.Vary(&task, data)
		want, werr := json.Marshal(task)
		got, gerr := appendBoard(nil, []board.Task{task})
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("appendBoard error %v, json.Marshal's %v\n got %.300s", gerr, werr, got)
		}
		if werr == nil && string(got) != "{\"tasks\":[\n"+string(want)+"\n]}\n" {
			t.Fatalf("appendBoard\n got %.300s\nwant %.300s", got, want)
		}
	})
}
