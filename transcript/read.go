package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTornTail is wrapped by ReadFile's error when the file's last line is
// incomplete, as a crash in the middle of a write leaves it. The entries
// before it are returned with the error.
var ErrTornTail = errors.New("incomplete last line")

// ReadFile loads a JSON-lines transcript written by a Transcript. Blank
// lines are skipped. On a torn last line it returns the entries before it
// and an error wrapping ErrTornTail.
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := Read(f)
	if err != nil {
		return entries, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}

// Read loads JSON-lines entries from r; see ReadFile.
func Read(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var entries []Entry
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return entries, fmt.Errorf("line %d: %w", line, err)
		}
		complete := err == nil
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var e Entry
			if jerr := json.Unmarshal(t, &e); jerr != nil {
				if !complete {
					return entries, fmt.Errorf("line %d: %w: %w", line, ErrTornTail, jerr)
				}
				return entries, fmt.Errorf("line %d: %w", line, jerr)
			}
			entries = append(entries, e)
		}
		if !complete {
			return entries, nil
		}
	}
}
