package artifact

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"

	"github.com/fsdrun/fsd/tokens"
)

// MaxResourceBytes bounds a resource file: larger files are refused on
// first read rather than held in memory.
const MaxResourceBytes = 8 << 20

// Store holds spooled artifacts for one run. It is safe for concurrent
// use: board workers read artifacts while the host spools new ones.
type Store struct {
	rand io.Reader
	// key derives handles from content (NewKeyedStore); nil draws them
	// from rand.
	key    []byte
	parser parser.Parser

	mu       sync.Mutex
	byKey    map[skillKey]*entry
	byHandle map[string]*entry
}

type skillKey struct{ id, version string }

// entry is one spooled skill: its body and its resources, all under one
// handle.
type entry struct {
	handle, skillID, version string
	body                     *doc
	dir                      string
	resources                map[string]*resource
	names                    []string // resource paths, sorted
	// ready is closed once body is indexed; body is read only after it.
	ready chan struct{}
	// work is a tool result kept by KeepResult: readable whatever is
	// loaded.
	work bool
	// identity is what a keyed handle was derived from (handleOf).
	identity string
}

type resource struct {
	once sync.Once
	doc  *doc
	err  error
}

// doc is one artifact's bytes with what the readers derive from them.
type doc struct {
	name  string // how errors and notes name it: "the body" or a path
	src   []byte
	lines []int
	md    *mdIndex // nil for artifacts that are not markdown

	tokOnce sync.Once
	tokens  int
	txtOnce sync.Once
	text    string
}

func (d *doc) tokenCount() int {
	// Tokenizing 75 KB takes milliseconds: too slow for spool time, and
	// most artifacts are never asked for their size.
	d.tokOnce.Do(func() { d.tokens = tokens.Count(string(d.src)) })
	return d.tokens
}

func (d *doc) plainText() string {
	d.txtOnce.Do(func() { d.text = d.md.plainText() })
	return d.text
}

// mdParser is the one markdown parser every store shares: building it
// was about a quarter of a short remote task's setup, since a worker
// makes a store per task. It keeps no state between Parse calls (each
// gets its own context), so stores may call it at once (U10).
var mdParser = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()
})

// NewStore returns an empty store. Handles are drawn from rnd; nil means
// crypto/rand, which production must use. Tests pass a seeded reader to
// get the same handles on every run.
func NewStore(rnd io.Reader) *Store {
	if rnd == nil {
		rnd = rand.Reader
	}
	return &Store{
		rand:     rnd,
		parser:   mdParser(),
		byKey:    map[skillKey]*entry{},
		byHandle: map[string]*entry{},
	}
}

// Spool stores a skill's body as a markdown artifact and returns its
// handle. The first Spool of a (skillID, version) pair parses the body;
// later ones return the same handle and do no work, whatever body they
// pass, since a version names one body.
//
// resources are the files beside the skill (slash paths relative to dir)
// that readers may open by path. They are checked for form here and read
// lazily on first use, never from outside dir.
func (s *Store) Spool(skillID, version string, body []byte, dir string, resources []string) (string, error) {
	key := skillKey{skillID, version}
	s.mu.Lock()
	if e, ok := s.byKey[key]; ok {
		s.mu.Unlock()
		<-e.ready // a concurrent first Spool may still be parsing
		return e.handle, nil
	}
	e := &entry{skillID: skillID, version: version, dir: dir, resources: map[string]*resource{}, ready: make(chan struct{})}
	for _, r := range resources {
		p, err := cleanResource(r)
		if err != nil {
			s.mu.Unlock()
			return "", fmt.Errorf("spool %s %s: %w", skillID, version, err)
		}
		if _, dup := e.resources[p]; !dup {
			e.resources[p] = &resource{}
			e.names = append(e.names, p)
		}
	}
	if len(e.resources) > 0 && dir == "" {
		s.mu.Unlock()
		return "", fmt.Errorf("spool %s %s: resources listed but no skill folder given", skillID, version)
	}
	sort.Strings(e.names)
	var h string
	var err error
	if s.key != nil {
		hk, id := handleOf(s.key, "skill", body, append([]string{skillID, version}, e.names...)...)
		h, err = s.claim(e, hk, id)
	} else if h, err = s.newHandle(); err == nil {
		e.handle = h
		s.byHandle[h] = e
	}
	if err != nil {
		s.mu.Unlock()
		return "", fmt.Errorf("spool %s %s: %w", skillID, version, err)
	}
	s.byKey[key] = e
	s.mu.Unlock()

	// Parse outside the lock: readers of other skills go on meanwhile.
	// Call waits on ready before it touches the body.
	defer close(e.ready) // even if goldmark panics, waiters must not hang
	e.body = s.newDoc("the body", body, true)
	return h, nil
}

// newHandle draws 128 bits: a handle says nothing about the skill, so a
// model cannot reach an artifact it was not given. Called with s.mu held.
func (s *Store) newHandle() (string, error) {
	var b [16]byte
	for range 4 {
		if _, err := io.ReadFull(s.rand, b[:]); err != nil {
			return "", fmt.Errorf("draw handle: %w", err)
		}
		h := "h_" + hex.EncodeToString(b[:])
		if _, taken := s.byHandle[h]; !taken {
			return h, nil
		}
	}
	return "", errors.New("draw handle: random source keeps repeating itself")
}

func (s *Store) newDoc(name string, src []byte, markdown bool) *doc {
	d := &doc{name: name, src: append([]byte(nil), src...)}
	d.lines = lineStarts(d.src)
	if markdown {
		d.md = buildIndex(s.parser, d.src, d.lines)
	}
	return d
}

// SkillOf returns the skill and version a handle was spooled for.
func (s *Store) SkillOf(handle string) (skillID, version string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byHandle[handle]
	if !ok {
		return "", "", false
	}
	return e.skillID, e.version, true
}

// Pointer renders what a request carries for a handle-channel skill in
// place of its body: a few dozen tokens naming the skill, the handle and
// how to read it. It returns "" for an unknown handle.
func (s *Store) Pointer(handle string) string {
	s.mu.Lock()
	e, ok := s.byHandle[handle]
	s.mu.Unlock()
	if !ok {
		return ""
	}
	<-e.ready
	var sb strings.Builder
	fmt.Fprintf(&sb, "Skill %s %s: instructions are artifact %s (%d lines). Read them with artifact_md get=headings, then get=section, or artifact_read get=grep.",
		e.skillID, e.version, e.handle, lineCount(e.body))
	if len(e.names) > 0 {
		const show = 8
		fmt.Fprintf(&sb, " Resources (pass as path): %s", strings.Join(e.names[:min(len(e.names), show)], ", "))
		if len(e.names) > show {
			fmt.Fprintf(&sb, " and %d more", len(e.names)-show)
		}
		sb.WriteString(".")
	}
	return sb.String()
}

// cleanResource checks a resource path's form: relative, slash-separated,
// no "..", nothing a reader could use to leave the skill folder by name.
// Symlinks are checked when the file is opened.
func cleanResource(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty resource path")
	}
	if strings.Contains(p, `\`) || path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("resource path %q must be a relative slash path inside the skill folder", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("resource path %q may not contain \"..\"", p)
		}
	}
	c := path.Clean(p)
	if c == "." || !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", fmt.Errorf("resource path %q does not name a file inside the skill folder", p)
	}
	return c, nil
}

// open returns the resource at p, reading and indexing it on first use.
func (s *Store) open(e *entry, p string) (*doc, error) {
	c, err := cleanResource(p)
	if err != nil {
		return nil, err
	}
	r, ok := e.resources[c]
	if !ok {
		return nil, fmt.Errorf("skill %s has no resource %q; its resources are: %s", e.skillID, p, listOrNone(e.names))
	}
	r.once.Do(func() {
		var b []byte
		b, r.err = readInside(e.dir, c)
		if r.err == nil {
			r.doc = s.newDoc(c, b, isMarkdown(c))
		}
	})
	return r.doc, r.err
}

func isMarkdown(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown":
		return true
	}
	return false
}

// readInside reads rel under dir, refusing anything that resolves outside
// dir. The symlink check gives a clear error; os.Root then opens the file
// without a window for a swapped link between check and open.
func readInside(dir, rel string) ([]byte, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("resource %q: skill folder: %w", rel, err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resource %q: skill folder: %w", rel, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resource %q does not exist in the skill folder", rel)
	}
	if err != nil {
		// The underlying error names host paths the model has no use for.
		return nil, fmt.Errorf("resource %q cannot be read", rel)
	}
	if r, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(r) {
		return nil, fmt.Errorf("resource %q resolves outside the skill folder; it is not readable", rel)
	}
	fsRoot, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", rel, err)
	}
	defer fsRoot.Close()
	f, err := fsRoot.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("resource %q cannot be read: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("resource %q is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxResourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", rel, err)
	}
	if len(b) > MaxResourceBytes {
		return nil, fmt.Errorf("resource %q is larger than %d bytes; it is not readable as an artifact", rel, MaxResourceBytes)
	}
	return b, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	const show = 20
	s := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		s += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return s
}
