package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/fsdrun/fsd/tool"
)

// Bounds of Glob and Grep.
const (
	// MaxGlobResults is how many paths Glob lists.
	MaxGlobResults = 1000
	// MaxGrepFileBytes: larger files are skipped by Grep.
	MaxGrepFileBytes = 10 << 20
	// maxVisit bounds the entries one search walks, so a workspace that
	// holds a whole disk answers in bounded time.
	maxVisit = 200_000
)

// errStop ends a walk early.
var errStop = errors.New("stop")

// search is a walk of the files under a place, in lexical order,
// skipping .git folders.
type search struct {
	t     *Tool
	p     place
	root  *os.Root
	seen  int
	cut   bool // the walk stopped at maxVisit
	shown func(name string) string
}

// startSearch places dir ("" is the workspace) for a reading tool.
func (t *Tool) startSearch(dir string) (*search, *tool.Result) {
	if dir == "" {
		dir = "."
	}
	p, err := t.ws.resolve(dir, t.readOnly(), true)
	if err != nil {
		r := fail(err)
		return nil, &r
	}
	root, err := p.open()
	if err != nil {
		r := fail(t.ws.explain(p, err))
		return nil, &r
	}
	s := &search{t: t, p: p, root: root, shown: func(name string) string { return place{root: p.root, name: name, readOnly: p.readOnly}.shown() }}
	if _, err := root.Stat(p.name); err != nil {
		root.Close()
		r := fail(t.ws.explain(p, err))
		return nil, &r
	}
	return s, nil
}

// walk calls f for each file under the place: its name in the root and
// its path relative to the place.
func (s *search) walk(f func(name, rel string) error) error {
	err := fs.WalkDir(s.root.FS(), s.p.name, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == s.p.name {
				return err
			}
			return nil // an unreadable folder is skipped, not the search
		}
		if s.seen++; s.seen > maxVisit {
			s.cut = true
			return errStop
		}
		if d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			if h := s.t.ws.hiddenIn(s.p.root, name); h != "" {
				if d.IsDir() {
					return fs.SkipDir // the run records are not searched
				}
				return nil
			}
		}
		if d.IsDir() {
			if d.Name() == ".git" && name != s.p.name {
				return fs.SkipDir
			}
			return nil
		}
		rel := name
		if s.p.name != "." {
			rel = strings.TrimPrefix(strings.TrimPrefix(name, s.p.name), "/")
			if rel == "" {
				rel = path.Base(name) // the place is this one file
			}
		}
		return f(name, rel)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// note is what a search says after its results when the walk was cut.
func (s *search) note() string {
	if !s.cut {
		return ""
	}
	return fmt.Sprintf("[search stopped after %d entries: give a narrower path]\n", maxVisit)
}

// badGlob checks a glob pattern's syntax.
func badGlob(pattern string) error {
	alts := braces(pattern)
	if len(alts) > maxAlternatives {
		return fmt.Errorf("glob %q has more than %d alternatives; give fewer {a,b} choices", pattern, maxAlternatives)
	}
	for _, alt := range alts {
		for _, seg := range strings.Split(alt, "/") {
			if _, err := path.Match(seg, ""); err != nil {
				return fmt.Errorf("glob %q is malformed (a [ without ]?); use *, ?, [abc], {a,b} and ** between slashes", pattern)
			}
		}
	}
	return nil
}

// maxAlternatives bounds what a glob's braces expand to: {a,b}{c,d}…
// doubles with each pair.
const maxAlternatives = 256

// braces expands a glob's {a,b} alternatives, as Claude Code's Glob and
// Grep (ripgrep's globs) take them — its Grep offers "*.{ts,tsx}" as the
// example, so a model writes it. Nested braces expand; a { without its }
// is a literal, and a \ escapes the next character. It stops expanding
// past maxAlternatives.
func braces(p string) []string {
	depth, start, open := 0, 0, -1
	var alts []string
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth++; depth == 1 {
				open, start = i, i+1
			}
		case ',':
			if depth == 1 {
				alts, start = append(alts, p[start:i]), i+1
			}
		case '}':
			if depth == 0 {
				continue
			}
			if depth--; depth > 0 {
				continue
			}
			var out []string
			for _, alt := range append(alts, p[start:i]) {
				out = append(out, braces(p[:open]+alt+p[i+1:])...)
				if len(out) > maxAlternatives {
					break
				}
			}
			return out
		}
	}
	return []string{p}
}

// globMatch reports whether name (slash-separated) matches pattern,
// where ** stands for any number of folders, none included, and {a,b}
// for either.
func globMatch(pattern, name string) bool {
	segs := strings.Split(name, "/")
	for _, alt := range braces(pattern) {
		if matchSegs(strings.Split(alt, "/"), segs) {
			return true
		}
	}
	return false
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func (t *Tool) glob(_ context.Context, args json.RawMessage) tool.Result {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	pattern := strings.TrimPrefix(path.Clean(a.Pattern), "./")
	if a.Pattern == "" || path.IsAbs(pattern) {
		return failf("pattern %q: give a glob relative to the folder searched, such as **/*.py, and the folder as path", a.Pattern)
	}
	if err := badGlob(pattern); err != nil {
		return fail(err)
	}
	s, bad := t.startSearch(a.Path)
	if bad != nil {
		return *bad
	}
	defer s.root.Close()
	var found []string
	more := 0
	err := s.walk(func(name, rel string) error {
		if globMatch(pattern, rel) {
			if len(found) < MaxGlobResults {
				found = append(found, s.shown(name))
			} else {
				more++
			}
		}
		return nil
	})
	if err != nil {
		return fail(t.ws.explain(s.p, err))
	}
	if len(found) == 0 {
		return tool.Result{Text: "No files match " + a.Pattern + "\n" + s.note()}
	}
	text := strings.Join(found, "\n") + "\n"
	if more > 0 {
		text += fmt.Sprintf("[%d more match; give a narrower pattern or path]\n", more)
	}
	return tool.Result{Text: text + s.note()}
}

func (t *Tool) grep(_ context.Context, args json.RawMessage) tool.Result {
	var a struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		OutputMode string `json:"output_mode"`
		Fold       bool   `json:"-i"`
		Numbers    *bool  `json:"-n"`
		HeadLimit  int    `json:"head_limit"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	expr := a.Pattern
	if a.Fold {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return failf("pattern %q is not a valid regular expression (RE2 syntax): %s", a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	if a.Glob != "" {
		if err := badGlob(a.Glob); err != nil {
			return fail(err)
		}
	}
	mode := a.OutputMode
	if mode == "" {
		mode = "files_with_matches"
	}
	numbers := a.Numbers == nil || *a.Numbers
	s, bad := t.startSearch(a.Path)
	if bad != nil {
		return *bad
	}
	defer s.root.Close()
	var b strings.Builder
	entries := 0
	var large []string
	full := func() bool { return a.HeadLimit > 0 && entries >= a.HeadLimit || b.Len() > tool.MaxOutputBytes }
	err = s.walk(func(name, rel string) error {
		if a.Glob != "" && !grepGlob(a.Glob, rel) {
			return nil
		}
		n, err := s.grepFile(name, re, func(line int, text string) bool {
			if mode == "content" {
				if t.mask != nil {
					// Before the cut, which could split a secret.
					text = t.mask(text)
				}
				if len(text) > MaxLineChars {
					text = cutUTF8(text, MaxLineChars) + " [line cut]"
				}
				if numbers {
					fmt.Fprintf(&b, "%s:%d:%s\n", s.shown(name), line, text)
				} else {
					fmt.Fprintf(&b, "%s:%s\n", s.shown(name), text)
				}
				entries++
				return !full()
			}
			return mode == "count" // files_with_matches needs one
		})
		if errors.Is(err, errTooLarge) {
			large = append(large, s.shown(name))
		}
		if err != nil {
			return nil
		}
		if n > 0 {
			switch mode {
			case "files_with_matches":
				fmt.Fprintf(&b, "%s\n", s.shown(name))
				entries++
			case "count":
				fmt.Fprintf(&b, "%s:%d\n", s.shown(name), n)
				entries++
			}
		}
		if full() {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fail(t.ws.explain(s.p, err))
	}
	if b.Len() == 0 {
		return tool.Result{Text: "No matches\n" + tooLarge(large) + s.note()}
	}
	if full() {
		fmt.Fprintf(&b, "[stopped at %d results]\n", entries)
	}
	return tool.Result{Text: b.String() + tooLarge(large) + s.note()}
}

// maxNamed is how many files too large to search Grep names.
const maxNamed = 5

// tooLarge is Grep's note on the files it did not search for their size,
// so that no match is not taken for the text being nowhere.
func tooLarge(names []string) string {
	if len(names) == 0 {
		return ""
	}
	more := ""
	if len(names) > maxNamed {
		names, more = names[:maxNamed], fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	return fmt.Sprintf("[not searched, over %d MiB: %s%s; search them with Bash, e.g. grep -n]\n", MaxGrepFileBytes>>20, strings.Join(names, ", "), more)
}

// grepGlob is Grep's file filter: a glob without a slash matches a
// file's name at any depth (as ripgrep's --glob does), one with a slash
// its path from the folder searched.
func grepGlob(glob, rel string) bool {
	for _, alt := range braces(glob) {
		if strings.Contains(alt, "/") {
			if globMatch(alt, rel) {
				return true
			}
		} else if ok, _ := path.Match(alt, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

// errSkip marks a file Grep does not search (binary, not a file);
// errTooLarge one it does not search for its size, which it names.
var (
	errSkip     = errors.New("skipped")
	errTooLarge = errors.New("too large")
)

// grepFile calls hit for each line of name that re matches, while hit
// says to go on; it returns how many lines matched.
func (s *search) grepFile(name string, re *regexp.Regexp, hit func(line int, text string) bool) (int, error) {
	f, err := s.t.ws.openRead(s.root, name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0, errSkip
	} else if st.Size() > MaxGrepFileBytes {
		return 0, errTooLarge
	}
	br := textReader(f)
	if head, _ := br.Peek(sniffBytes); binary(head) {
		return 0, errSkip
	}
	n := 0
	for line := 1; ; line++ {
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			break
		}
		text = strings.TrimRight(text, "\r\n")
		if re.MatchString(text) {
			n++
			if !hit(line, text) {
				break
			}
		}
		if err != nil {
			break
		}
	}
	return n, nil
}
