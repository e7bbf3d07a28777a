package event

import (
	"testing"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendJSON: for any event, AppendJSON writes what json.Marshal
// writes, and fails where it fails.
func FuzzAppendJSON(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, func(e *Event) ([]byte, error) { return e.AppendJSON(nil) }); err != nil {
			t.Fatal(err)
		}
	})
}
