package event

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendJSON: for any event, AppendJSON writes what json.Marshal
// writes, and fails where it fails.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range jsonw.Seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Event
		jsonw.Vary(&e, data)
		want, werr := json.Marshal(e)
		got, gerr := e.AppendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("AppendJSON error %v, json.Marshal's %v\n got %.300s", gerr, werr, got)
		}
		if werr == nil && string(got) != string(want) {
			t.Fatalf("AppendJSON\n got %.300s\nwant %.300s", got, want)
		}
	})
}
