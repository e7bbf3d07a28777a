package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
	"go.yaml.in/yaml/v4/plugin/loaderlimits"

	"github.com/fsdrun/fsd/diag"
)

// Limits on manifest files. They keep a hostile or broken file from
// costing more than a moment: every one is checked before or while
// parsing, and reported at a file:line:col.
const (
	// MaxFileSize is the largest manifest, SKILL.md or instructions file.
	MaxFileSize = 4 << 20
	// MaxWorkflowSize is the largest workflow file (G2): a workflow lists its
	// static tasks, and a fan-out of 100,000 tasks with their join is
	// about 6.5 MiB of YAML. Loading is linear in the file, so this
	// bounds the memory a hostile file may cost as MaxFileSize does.
	MaxWorkflowSize = 16 << 20
	// MaxDepth is the deepest YAML nesting (block or flow).
	MaxDepth = 100
	// MaxDescription and MaxCompatibility are the Agent Skills bounds.
	MaxDescription   = 1024
	MaxCompatibility = 500
	// MaxResources bounds the files listed as a SKILL.md folder's resources.
	MaxResources = 1000
	// MaxToolDescription bounds a tool's description, in bytes, and
	// MaxToolSchema a tool's input schema and an agent's output schema,
	// as compact JSON: each is sent with every request that offers the
	// tool or asks for the output, so their size is paid on every model
	// call. Both are several times what a generous hand-written tool
	// needs (a long description is a few hundred words; a schema of
	// dozens of documented arguments is a few KiB).
	MaxToolDescription = 16 << 10
	MaxToolSchema      = 64 << 10
)

// readFile reads a manifest, refusing files over MaxFileSize without
// reading them whole.
func readFile(path string) ([]byte, diag.List) { return readLimited(path, MaxFileSize) }

// readLimited reads a file of at most limit bytes, refusing a larger one
// without reading it whole.
func readLimited(path string, limit int64) ([]byte, diag.List) {
	at := diag.Pos{File: path, Line: 1, Col: 1}
	// Stat before Open: opening a named pipe blocks until a writer comes,
	// and a device's size (0) bounds nothing (/dev/zero never ends).
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return nil, diag.List{diag.Errorf(at, "io", "is not a regular file (%s)", specialKind(st.Mode()))}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, diag.List{diag.Errorf(at, "io", "%s", ioMessage(err))}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, diag.List{diag.Errorf(at, "io", "%s", ioMessage(err))}
	}
	if st.IsDir() {
		return nil, diag.List{diag.Errorf(at, "io", "is a folder, not a file")}
	}
	if !st.Mode().IsRegular() {
		// Replaced by a pipe or device since the Stat above.
		return nil, diag.List{diag.Errorf(at, "io", "is not a regular file (%s)", specialKind(st.Mode()))}
	}
	if st.Size() > limit {
		return nil, diag.List{diag.Errorf(at, "limit", "file is %d bytes, over the %d-byte (%d MiB) limit", st.Size(), limit, limit>>20)}
	}
	data := make([]byte, 0, st.Size()+1)
	buf := bytes.NewBuffer(data)
	// Read one byte past the limit: the file may grow after Stat.
	if _, err := buf.ReadFrom(&limitReader{f, limit + 1}); err != nil {
		return nil, diag.List{diag.Errorf(at, "io", "%s", ioMessage(err))}
	}
	if int64(buf.Len()) > limit {
		return nil, diag.List{diag.Errorf(at, "limit", "file is over the %d-byte (%d MiB) limit", limit, limit>>20)}
	}
	return buf.Bytes(), nil
}

// specialKind names a file mode that is not a regular file's or a folder's.
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// limitReader reads at most n bytes in all; a pointer, so the count left
// survives from one Read to the next (a value's did not, and bounded only
// each Read, not the file).
type limitReader struct {
	f *os.File
	n int64
}

func (r *limitReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := r.f.Read(p)
	r.n -= int64(n)
	return n, err
}

func ioMessage(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file or folder"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("cannot %s: %v", pe.Op, pe.Err)
	}
	return err.Error()
}

// checkText rejects binary input before the YAML parser sees it, so the
// error says what is wrong and where: a NUL byte or invalid UTF-8.
func checkText(file string, data []byte) diag.List {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return diag.List{diag.Errorf(diag.Pos{File: file, Line: line, Col: col}, "encoding", "file is not UTF-8 text (byte 0x%02x at offset %d); is it binary?", data[i], i)}
		case r == 0:
			return diag.List{diag.Errorf(diag.Pos{File: file, Line: line, Col: col}, "encoding", "file contains a NUL byte at offset %d; is it binary?", i)}
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return nil
}

// parseYAML parses one YAML document into a node tree with positions.
// An empty document (nothing, or only comments) is an error: a manifest
// has required keys. A SKILL.md passes its frontmatter with the fence
// line blanked, so positions are the file's own.
func parseYAML(file string, data []byte) (*yaml.Node, diag.List) {
	root, diags := parseDocument(file, data)
	if diags != nil {
		return nil, diags
	}
	if root.Kind != yaml.MappingNode {
		return nil, diag.List{diag.Errorf(diag.Pos{File: file, Line: root.Line, Col: root.Column}, "syntax", "expected a YAML mapping of keys, got %s", nodeKind(root))}
	}
	return root, nil
}

// parseDocument parses one YAML (or JSON) document of any kind: a
// skill-creator trigger set is a list.
func parseDocument(file string, data []byte) (*yaml.Node, diag.List) {
	if d := checkText(file, data); d != nil {
		return nil, d
	}
	start := diag.Pos{File: file, Line: 1, Col: 1}
	if !hasContent(data) {
		return nil, diag.List{diag.Errorf(start, "syntax", "file is empty: expected a YAML mapping")}
	}
	loader, err := yaml.NewLoader(bytes.NewReader(data), yaml.WithPlugin(loaderlimits.New(loaderlimits.DepthValue(MaxDepth))))
	if err != nil {
		return nil, diag.List{diag.Errorf(start, "internal", "%v", err)}
	}
	var doc yaml.Node
	if err := loader.Load(&doc); err != nil {
		return nil, diag.List{yamlError(file, data, err)}
	}
	// A manifest is one document; a second one is probably a mistake
	// (two files pasted together) rather than something to ignore.
	var next yaml.Node
	if err := loader.Load(&next); err == nil {
		return nil, diag.List{diag.Errorf(diag.Pos{File: file, Line: max(next.Line, 1), Col: max(next.Column, 1)}, "syntax", "a second YAML document starts here; a manifest is one document")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	return root, nil
}

// hasContent reports whether data holds anything but blank lines,
// comments and document markers, to tell an empty manifest from a broken one.
func hasContent(data []byte) bool {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) && !bytes.Equal(t, []byte("...")) {
			return true
		}
	}
	return false
}

// yamlError turns a parser error into a diagnostic at its position. Tabs
// get a hint: "cannot start any token" is the parser's word for a tab.
func yamlError(file string, data []byte, err error) diag.Diagnostic {
	var le *yaml.LoadError
	if errors.As(err, &le) {
		mark := le.Mark
		if mark.Line == 0 && le.ContextMark.Line > 0 {
			mark = le.ContextMark
		}
		p := diag.Pos{File: file, Line: max(mark.Line, 1), Col: max(mark.Column, 1)}
		msg := le.Message
		if le.ContextMsg != "" {
			msg = le.ContextMsg + ": " + msg
		}
		if c := le.ContextMark; c.Line > 0 && mark.Line > c.Line && le.ContextMsg != "" {
			// An unclosed quote or bracket is found lines later (often
			// at the end of the file): point where it starts, which is
			// where the fix goes.
			p = diag.Pos{File: file, Line: c.Line, Col: max(c.Column, 1)}
			what := strings.TrimPrefix(strings.TrimPrefix(le.ContextMsg, "while scanning "), "while parsing ")
			what = yamlWords.Replace(what)
			if strings.Contains(le.Message, "end of stream") {
				msg = fmt.Sprintf("%s starts here and is never closed: the file ends first", what)
			} else {
				msg = fmt.Sprintf("%s starts here and is not closed where it should be (line %d, column %d: %s)", what, mark.Line, max(mark.Column, 1), le.Message)
			}
		}
		d := diag.Errorf(p, "syntax", "%s", msg)
		if mark.Index >= 0 && mark.Index < len(data) && data[mark.Index] == '\t' {
			d.Hint = "YAML indentation must use spaces, not tabs"
		} else if mark.Line > 0 && tabAt(data, mark.Line, mark.Column) {
			d.Hint = "YAML indentation must use spaces, not tabs"
		}
		return d
	}
	return diag.Errorf(diag.Pos{File: file, Line: 1, Col: 1}, "syntax", "%v", err)
}

// yamlWords are the parser's names for what was left open, in an
// author's words.
var yamlWords = strings.NewReplacer("a quoted scalar", "a quoted string", "a flow sequence", "a [ list", "a flow mapping", "a { mapping")

func tabAt(data []byte, line, col int) bool {
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if line-1 >= len(lines) {
		return false
	}
	l := lines[line-1]
	return col-1 >= 0 && col-1 < len(l) && l[col-1] == '\t'
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%s %q", scalarKind(n), clip(n.Value))
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

func scalarKind(n *yaml.Node) string {
	switch n.ShortTag() {
	case "!!int":
		return "integer"
	case "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return "string"
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}
