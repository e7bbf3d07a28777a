package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/fsdrun/fsd/tool"
)

// Bounds of Read and Edit.
const (
	// DefaultReadLines is how many lines Read returns when no limit is
	// given.
	DefaultReadLines = 2000
	// MaxLineChars is how much of one line Read shows.
	MaxLineChars = 2000
	// MaxEditBytes bounds the file Edit rewrites: it is read whole.
	MaxEditBytes = 10 << 20
	// sniffBytes is how much of a file decides whether it is text.
	sniffBytes = 8 << 10
	// lineSlack is how much of a line is kept past MaxLineChars, so that
	// a secret the cut would split is masked whole before the cut.
	lineSlack = 4 << 10
)

// binary reports whether head looks like a binary file's start: a NUL
// byte, or more than one byte in ten not part of UTF-8 (a text file in
// Latin-1 reads with a few marks; a PDF's streams do not).
func binary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
			bad++ // (a character cut by the sniff's end is not)
		}
		i += n
	}
	return bad*10 > len(head)
}

func (t *Tool) read(_ context.Context, args json.RawMessage) tool.Result {
	var a struct {
		FilePath string `json:"file_path"`
		Offset   int    `json:"offset"`
		Limit    int    `json:"limit"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	if a.Offset < 1 {
		a.Offset = 1
	}
	if a.Limit < 1 {
		a.Limit = DefaultReadLines
	}
	p, err := t.ws.resolve(a.FilePath, t.readOnly(), true)
	if err != nil {
		return fail(err)
	}
	root, err := p.open()
	if err != nil {
		return fail(t.ws.explain(p, err))
	}
	defer root.Close()
	f, err := t.ws.openRead(root, p.name)
	if err != nil {
		return fail(t.ws.explain(p, err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return failf("%s is a folder; list it with Glob (pattern %s/*)", p.shown(), strings.TrimSuffix(p.name, "/"))
	}
	br := textReader(f)
	head, _ := br.Peek(sniffBytes)
	if binary(head) {
		return failf("%s is a binary file; Read shows text files only (use Bash to inspect it, e.g. file or xxd)", p.shown())
	}
	var b strings.Builder
	n, shown := 0, 0
	for {
		text, size, err := readLine(br, t.mask)
		if size == 0 && err != nil {
			break
		}
		n++
		if n >= a.Offset && shown < a.Limit {
			fmt.Fprintf(&b, "%6d\t%s\n", n, text)
			shown++
			if b.Len() > tool.MaxOutputBytes {
				fmt.Fprintf(&b, "[output cut at %d MiB: read on with offset %d]\n", tool.MaxOutputBytes>>20, n+1)
				return tool.Result{Text: b.String(), Truncated: true}
			}
		}
		if err != nil {
			break
		}
		if shown == a.Limit {
			// Count no further: the model asked for this much.
			if _, err := br.Peek(1); err == nil {
				fmt.Fprintf(&b, "[more lines follow: read on with offset %d]\n", n+1)
			}
			break
		}
	}
	switch {
	case n == 0:
		return tool.Result{Text: fmt.Sprintf("%s is empty", p.shown())}
	case shown == 0:
		return failf("%s has %d lines; offset %d is past its end", p.shown(), n, a.Offset)
	}
	return tool.Result{Text: b.String()}
}

// textReader reads a text file as UTF-8: one that starts with a UTF-16
// byte-order mark (Windows tools write them) is decoded, as ripgrep,
// behind Claude Code's Grep, decodes it; a UTF-8 mark is dropped.
func textReader(f io.Reader) *bufio.Reader {
	return bufio.NewReaderSize(transform.NewReader(f, unicode.BOMOverride(transform.Nop)), 64<<10)
}

// readLine reads one line of br as Read shows it: without its line end,
// masked (mask nil: not), cut at MaxLineChars. It keeps no more of the
// line than that and lineSlack, so a file that is one huge line (minified
// JSON, a log without newlines) costs that, not its size. size is the
// bytes read, 0 at the end.
func readLine(br *bufio.Reader, mask func(string) string) (text string, size int, err error) {
	var b []byte
	for {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		size += len(chunk)
		b = append(b, chunk[:min(len(chunk), MaxLineChars+lineSlack+2-len(b))]...) // +2: room for \r\n
		if err != bufio.ErrBufferFull {
			break
		}
	}
	text = strings.TrimRight(string(b), "\r\n")
	n := MaxLineChars
	if mask != nil {
		text = mask(text)
		if size > len(b) {
			// What was kept may end inside a secret, which masking
			// leaves; when masking shortened the text before it, a cut
			// at n would keep it.
			n = max(min(n, len(text)-lineSlack), 0)
		}
	}
	if size > len(b) || len(text) > n {
		text = cutUTF8(text, n) + " [line cut]"
	}
	return text, size, err
}

// errNotRegular refuses a FIFO, socket or device in the workspace.
var errNotRegular = errors.New("is not a regular file (a FIFO, socket or device); the file tools use regular files only")

// openRead opens name in root to read: a regular file or a folder,
// outside the hidden folders. Opened without blocking, as open(2) of a
// FIFO waits for a writer — a script's mkfifo would hang the call and
// every Grep over its folder.
func (w *Workspace) openRead(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := w.heldIn(f, name); err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() && !st.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	return f, nil
}

// cutUTF8 is s cut to at most n bytes, not inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (t *Tool) write(_ context.Context, args json.RawMessage) tool.Result {
	var a struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	p, root, bad := t.writable(a.FilePath)
	if bad != nil {
		return *bad
	}
	defer root.Close()
	_, statErr := root.Stat(p.name)
	if dir := path.Dir(p.name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fail(t.ws.explain(p, err))
		}
	}
	if err := t.ws.writeFile(root, p.name, []byte(a.Content)); err != nil {
		return fail(t.ws.explain(p, err))
	}
	verb := "Wrote"
	if statErr == nil {
		verb = "Replaced"
	}
	return tool.Result{Text: fmt.Sprintf("%s %s (%d bytes)", verb, p.name, len(a.Content))}
}

// writable places path for a tool that writes: in the workspace only,
// not the workspace folder itself; root is open on the workspace.
func (t *Tool) writable(filePath string) (place, *os.Root, *tool.Result) {
	p, err := t.ws.resolve(filePath, nil, false)
	if err != nil {
		r := fail(err)
		return p, nil, &r
	}
	if p.name == "." {
		r := failf("%q is the workspace folder itself; give a file's path", filePath)
		return p, nil, &r
	}
	root, err := p.open()
	if err != nil {
		r := fail(t.ws.explain(p, err))
		return p, nil, &r
	}
	return p, root, nil
}

// writeFile replaces name's content in root, keeping its mode when it
// exists (a script stays executable), when the file it opens is outside
// the hidden folders: it is truncated only once that is known.
func (w *Workspace) writeFile(root *os.Root, name string, data []byte) error {
	mode := fs.FileMode(0o644)
	if st, err := root.Stat(name); err == nil {
		if st.IsDir() {
			return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("is a folder")}
		}
		if !st.Mode().IsRegular() {
			return &fs.PathError{Op: "write", Path: name, Err: errNotRegular}
		}
		mode = st.Mode().Perm()
	}
	// Without blocking, as openRead: a FIFO put in the file's place since
	// the Stat above would hold the call until a reader came.
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, mode)
	if err != nil {
		return err
	}
	if err := w.heldIn(f, name); err != nil {
		f.Close()
		return err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return &fs.PathError{Op: "write", Path: name, Err: errNotRegular}
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// On disk before the call counts as done: the journal commits its
	// result at the step's end and a resume never writes the file again,
	// so a machine crash must not leave it empty behind a record that
	// says it was written.
	if err := syncFile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncFile flushes a written file to disk; tests count its calls.
var syncFile = (*os.File).Sync

func (t *Tool) edit(_ context.Context, args json.RawMessage) tool.Result {
	var a struct {
		FilePath   string `json:"file_path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	if a.OldString == "" {
		return failf("old_string is empty; give the exact text to replace (to create a file, use Write)")
	}
	if a.OldString == a.NewString {
		return failf("old_string and new_string are the same; nothing would change")
	}
	p, root, bad := t.writable(a.FilePath)
	if bad != nil {
		return *bad
	}
	defer root.Close()
	f, err := t.ws.openRead(root, p.name)
	if err != nil {
		return fail(t.ws.explain(p, err))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEditBytes+1))
	f.Close()
	if err != nil {
		return fail(t.ws.explain(p, err))
	}
	if len(data) > MaxEditBytes {
		return failf("%s is over %d MiB; Edit rewrites files up to that size (use Bash for larger ones)", p.name, MaxEditBytes>>20)
	}
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		// Read shows it as text; rewriting it would need its encoding kept.
		return failf("%s is UTF-16 text; Edit changes UTF-8 files only (convert it with Bash: iconv -f UTF-16 -t UTF-8)", p.name)
	}
	if binary(data[:min(len(data), sniffBytes)]) {
		return failf("%s is a binary file; Edit changes text files only", p.name)
	}
	text := string(data)
	n := strings.Count(text, a.OldString)
	if crlf := "\r\n"; n == 0 && strings.Contains(text, crlf) && !strings.Contains(a.OldString, "\r") {
		// Read shows lines without their \r: take the model's \n as the
		// file's line end, and keep it.
		a.OldString = strings.ReplaceAll(a.OldString, "\n", crlf)
		a.NewString = strings.ReplaceAll(strings.ReplaceAll(a.NewString, crlf, "\n"), "\n", crlf)
		n = strings.Count(text, a.OldString)
	}
	switch {
	case n == 0:
		return failf("old_string does not occur in %s; Read the file and give its exact text (spaces and line breaks included)", p.name)
	case n > 1 && !a.ReplaceAll:
		return failf("old_string occurs %d times in %s; give more of the surrounding text so it occurs once, or set replace_all to replace all %d", n, p.name, n)
	}
	if size := int64(len(text)) + int64(n)*int64(len(a.NewString)-len(a.OldString)); a.ReplaceAll && size > MaxEditBytes {
		// replace_all of a short string with a long one would build the
		// whole result in memory first: 10 MiB of "a" made 1,000 times
		// longer is 10 GB, and fsd dies of it.
		return failf("replacing all %d occurrences would make %s %d bytes, over the %d MiB Edit writes; replace fewer at once, or use Bash for larger files", n, p.name, size, MaxEditBytes>>20)
	}
	if a.ReplaceAll {
		text = strings.ReplaceAll(text, a.OldString, a.NewString)
	} else {
		text = strings.Replace(text, a.OldString, a.NewString, 1)
	}
	if err := t.ws.writeFile(root, p.name, []byte(text)); err != nil {
		return fail(t.ws.explain(p, err))
	}
	if n == 1 {
		return tool.Result{Text: fmt.Sprintf("Edited %s: 1 replacement", p.name)}
	}
	return tool.Result{Text: fmt.Sprintf("Edited %s: %d replacements", p.name, n)}
}
