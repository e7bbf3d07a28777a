package transcript

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendEntry: for any entry, a journal line is what json.Marshal
// writes, and the appender fails where it fails.
func FuzzAppendEntry(f *testing.F) {
	for _, s := range jsonw.Seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Entry
		jsonw.Vary(&e, data)
		want, werr := json.Marshal(e)
		got, gerr := appendEntryLine(nil, &e)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("appendEntryLine error %v, json.Marshal's %v\n got %.300s", gerr, werr, got)
		}
		if werr == nil && string(got) != string(want)+"\n" {
			t.Fatalf("appendEntryLine\n got %.300s\nwant %.300s", got, want)
		}
	})
}
