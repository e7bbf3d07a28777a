package runrecord

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/transcript"
)

// JournalLine is one line of journal.jsonl: which generator wrote it
// (journal.Head) and the transcript entry it wrote.
type JournalLine struct {
	journal.Head
	transcript.Entry
}

// GenEntries is one generator's part of the journal: its name in the
// record (GenName), and its transcript entries in order.
type GenEntries struct {
	Gen     journal.Gen
	Name    string
	Entries []transcript.Entry
}

// ReadJournal reads journal.jsonl: each generator's entries, the
// generators in the order of their first lines. A missing file holds no
// generators. On a torn last line (a crash mid-write) it returns what
// precedes it and an error wrapping transcript.ErrTornTail.
func ReadJournal(path string) ([]*GenEntries, error) { return readJournal(path, nil) }

// readJournal is ReadJournal of the lines keep is true of (all with keep
// nil); a line keep is false of is not decoded.
func readJournal(path string, keep func([]byte) bool) ([]*GenEntries, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []*GenEntries
	byGen := map[journal.Gen]*GenEntries{}
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		b, err := readLine(br)
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		complete := err == nil
		if t := bytes.TrimSpace(b); len(t) > 0 && (keep == nil || keep(t)) {
			var l JournalLine
			if jerr := json.Unmarshal(t, &l); jerr != nil {
				if !complete {
					return out, fmt.Errorf("%s:%d: %w: %w", path, n, transcript.ErrTornTail, jerr)
				}
				return out, fmt.Errorf("%s:%d: %w", path, n, jerr)
			}
			g := l.Head.Generator()
			ge := byGen[g]
			if ge == nil {
				ge = &GenEntries{Gen: g, Name: GenName(g)}
				byGen[g] = ge
				out = append(out, ge)
			}
			ge.Entries = append(ge.Entries, l.Entry)
		}
		if !complete {
			return out, nil
		}
	}
}

// readLine reads up to and with the next newline, in br's buffer unless
// the line is longer; io.EOF comes with a last line that has none.
func readLine(br *bufio.Reader) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: read the rest of it.
		long := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = br.ReadSlice('\n')
			long = append(long, b...)
		}
		b = long
	}
	return b, err
}

// GenName names a generator in the record (requests.jsonl's "gen", fsd
// show's generators): "transcript.jsonl" for the host, "tasks/ID.jsonl"
// for a task's first attempt and "tasks/ID.attempt-N.jsonl" for later
// ones, with the id encoded by FileName. (The names are those of the
// transcript files records kept before the journal.)
func GenName(g journal.Gen) string {
	if g.Task == "" {
		return HostFile
	}
	// One concatenation each: one allocation for the name.
	if g.Attempt > 1 {
		return TasksDir + "/" + FileName(g.Task) + ".attempt-" + strconv.Itoa(g.Attempt) + ".jsonl"
	}
	return TasksDir + "/" + FileName(g.Task) + ".jsonl"
}

// FileName encodes a task id as a file name, injectively, so two tasks
// never share a name: a-z, 0-9 and "-" stand for themselves and every
// other byte is "_" and two hex digits ("A" is "_41", "/" is "_2f", "_" is
// "_5f"). Upper case is encoded too, so the names stay distinct on
// case-insensitive file systems; "." never appears, so ".attempt-2" and
// ".jsonl" suffixes cannot be forged. A name over MaxNameBytes keeps its
// head and ends in a hash of the whole id.
//
// R9: injective, so no task id can take another's file or forge a suffix.
func FileName(id string) string {
	const hexDigits = "0123456789abcdef"
	if plainName(id) {
		return id // every byte stands for itself: no copy
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	name := b.String()
	if name == "" {
		return "_"
	}
	if len(name) > MaxNameBytes {
		sum := sha256.Sum256([]byte(id))
		name = name[:MaxNameBytes-33] + "~" + hex.EncodeToString(sum[:16])
	}
	return name
}

// plainName reports whether FileName keeps id as it is: not empty, not
// over MaxNameBytes, and only bytes that stand for themselves.
func plainName(id string) bool {
	if id == "" || len(id) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// MaxNameBytes leaves room under the common 255-byte file-name limit for
// ".attempt-N.jsonl".
const MaxNameBytes = 200
