package runrecord

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
)

// FuzzAppendLine: for any line, requests.jsonl gets what json.Marshal
// writes and a newline, or nothing where it fails.
func FuzzAppendLine(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, func(l *Line) ([]byte, error) {
			b := appendLine(nil, l)
			if len(b) == 0 {
				return nil, errors.New("no line")
			}
			if !bytes.HasSuffix(b, []byte("\n")) {
				t.Fatalf("a line without its newline: %.300s", b)
			}
			return b[:len(b)-1], nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzAppendBoard: for any task, board.json's line is what json.Marshal
// writes, and the appender fails where it fails.
func FuzzAppendBoard(f *testing.F) {
	jsonw.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonw.Compare(data, func(task *board.Task) ([]byte, error) {
			b, err := appendBoard(nil, []board.Task{*task})
			if err != nil {
				return nil, err
			}
			line, head := bytes.CutPrefix(b, []byte("{\"tasks\":[\n"))
			line, tail := bytes.CutSuffix(line, []byte("\n]}\n"))
			if !head || !tail {
				t.Fatalf("board.json is not one task a line: %.300s", b)
			}
			return line, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
