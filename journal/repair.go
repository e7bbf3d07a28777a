package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Repair says what RepairTail did to a file.
type Repair struct {
	// Cut is how many bytes of a torn last line were removed.
	Cut int64
	// Completed is true when a whole last line lacked only its newline,
	// which was added.
	Completed bool
}

// Changed reports whether the file was modified.
func (r Repair) Changed() bool { return r.Cut > 0 || r.Completed }

func (r Repair) String() string {
	switch {
	case r.Cut > 0:
		return fmt.Sprintf("cut a torn last line of %d bytes", r.Cut)
	case r.Completed:
		return "added the newline the last line lacked"
	}
	return "intact"
}

// RepairTail makes a JSON-lines file end in a whole line before anything
// is appended to it: a last line without its newline is completed if it
// is a whole JSON value (the crash came between the value and the
// newline) and cut off otherwise (the crash came mid-write). Without it
// the next append would glue a line onto the torn one, and the file would
// not parse again. A missing file is fine: there is nothing to repair.
// Only the file's tail is read.
//
// J2: repair before append.
func RepairTail(path string) (Repair, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Repair{}, nil
	}
	if err != nil {
		return Repair{}, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size == 0 {
		return Repair{}, err
	}
	start, line, err := lastLine(f, size)
	if err != nil {
		return Repair{}, err
	}
	if len(line) == 0 { // ends in a newline
		return Repair{}, nil
	}
	if t := bytes.TrimSpace(line); len(t) > 0 && json.Valid(t) {
		if _, err := f.WriteAt([]byte{'\n'}, size); err != nil {
			return Repair{}, err
		}
		return Repair{Completed: true}, f.Sync()
	}
	if err := f.Truncate(start); err != nil {
		return Repair{}, err
	}
	return Repair{Cut: size - start}, f.Sync()
}

// lastLine returns the offset and bytes of what follows the file's last
// newline, reading backwards in chunks.
func lastLine(f *os.File, size int64) (int64, []byte, error) {
	const chunk = 64 << 10
	var tail []byte
	for end := size; end > 0; {
		n := min(int64(chunk), end)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, end-n); err != nil {
			return 0, nil, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			start := end - n + int64(i) + 1
			return start, append(buf[i+1:], tail...), nil
		}
		tail = append(buf, tail...)
		end -= n
	}
	return 0, tail, nil
}
