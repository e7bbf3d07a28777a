package runrecord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/fsdrun/fsd/board"
)

// File is one of a record's files held open by a reader that comes back
// to it (fsd ui between fetches of a run's pages): it reads the lines
// appended since its last read, reads a line again by where it is, and
// says when the file at its path is no longer the one it holds, so the
// reader knows to read that file again whole.
type File struct {
	f    *os.File
	path string
	at   cursor
	// size and mod are the file's when opened: Changed compares them.
	size int64
	mod  time.Time
	buf  []byte
}

// Span is where a line, or a board task, is in its File.
type Span struct {
	Off int64
	N   int32
}

// OpenFile opens the file name of the record in dir (an error wrapping
// os.ErrNotExist when the record has none).
func OpenFile(dir, name string) (*File, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, path: path, size: fi.Size(), mod: fi.ModTime()}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Replaced says whether the file at the path is another one now (the
// writer replaced it, or it is gone), or is shorter than what was read
// of it (cut): of an append-only file, what was read no longer stands.
func (f *File) Replaced() bool {
	fi, err := os.Stat(f.path)
	if err != nil {
		return true
	}
	ffi, err := f.f.Stat()
	return err != nil || !os.SameFile(fi, ffi) || fi.Size() < f.at.off
}

// Changed says whether the file at the path is not as it was when opened:
// another file, or written since. A file read whole (board.json) is read
// again then.
func (f *File) Changed() bool {
	fi, err := os.Stat(f.path)
	if err != nil {
		return true
	}
	ffi, err := f.f.Stat()
	return err != nil || !os.SameFile(fi, ffi) || fi.Size() != f.size || !fi.ModTime().Equal(f.mod)
}

// EachNewLine calls fn with each whole, non-blank line appended since the
// last call (every line, the first time) and where it is; a last line
// without a newline is left for a later call, once whole.
func (f *File) EachNewLine(fn func(line []byte, sp Span) error) error {
	return eachLine(f.f, f.path, &f.at, false, func(b []byte, sp span) error {
		return fn(b, Span{Off: sp.off, N: sp.n})
	})
}

// Line is the line at sp, without its newline and surrounding space,
// valid until the next read.
func (f *File) Line(sp Span) ([]byte, error) { return readAt(f.f, sp.Off, int(sp.N), &f.buf) }

// EachBoardTask calls fn with the id and place of each task of a
// board.json, in the board's order, decoding of each no more than its id
// (valid until fn returns).
func (f *File) EachBoardTask(fn func(id []byte, sp Span) error) error {
	return eachBoardValue(io.NewSectionReader(f.f, 0, math.MaxInt64), f.path, func(dec *json.Decoder) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		end := dec.InputOffset()
		id, ok := plainID(raw)
		if !ok {
			var t struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("%s: %w", f.path, err)
			}
			id = []byte(t.ID)
		}
		return fn(id, Span{Off: end - int64(len(raw)), N: int32(len(raw))})
	})
}

// plainID is the id a board task's JSON starts with, as the writer puts
// it first, when it holds no escape.
func plainID(raw []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"id":"`))
	if !ok {
		return nil, false
	}
	id, _, ok := bytes.Cut(rest, []byte(`"`))
	return id, ok && bytes.IndexByte(id, '\\') < 0
}

// BoardTask decodes the board task at sp, as EachBoardTask placed it.
func (f *File) BoardTask(sp Span) (*board.Task, error) {
	b, err := f.Line(sp)
	if err != nil {
		return nil, err
	}
	var t board.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return &t, nil
}
