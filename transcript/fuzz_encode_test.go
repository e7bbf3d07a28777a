package transcript

import (
	"bytes"
	"testing"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendEntry: for any entry, a journal line is what json.Marshal
// writes and a newline, and the appender fails where it fails.
func FuzzAppendEntry(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, func(e *Entry) ([]byte, error) {
			b, err := appendEntryLine(nil, e)
			if err == nil && !bytes.HasSuffix(b, []byte("\n")) {
				t.Fatalf("a line without its newline: %.300s", b)
			}
			return bytes.TrimSuffix(b, []byte("\n")), err
		}); err != nil {
			t.Fatal(err)
		}
	})
}
