package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Handles carry 128 random bits and nothing of the skill (H1): two stores
// spooling the same skill get different handles, and a handle contains
// neither id nor version.
func TestHandlesUnguessable(t *testing.T) {
	form := regexp.MustCompile(`^h_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for i := range 50 {
		s := NewStore(nil)
		h := mustSpool(t, s, "weekly-report", "1.2.0", body, "", nil)
		if !form.MatchString(h) {
			t.Fatalf("handle %q is not h_ and 32 hex digits", h)
		}
		// Neither the id nor its hex encoding ("weekly" = 7765656b6c79).
		if strings.Contains(h, "weekly") || strings.Contains(h, "7765656b6c79") {
			t.Errorf("handle %q shows the skill id", h)
		}
		if seen[h] {
			t.Fatalf("store %d drew handle %s again", i, h)
		}
		seen[h] = true
	}
	// A seeded source reproduces handles; another seed does not.
	a := mustSpool(t, NewStore(seeded(7)), "weekly-report", "1.2.0", body, "", nil)
	b := mustSpool(t, NewStore(seeded(7)), "weekly-report", "1.2.0", body, "", nil)
	c := mustSpool(t, NewStore(seeded(8)), "weekly-report", "1.2.0", body, "", nil)
	if a != b || a == c {
		t.Errorf("seeded handles: %s, %s, %s; want the first two equal, the third different", a, b, c)
	}
	// The handle of one skill does not lead to another's.
	s := NewStore(nil)
	h1 := mustSpool(t, s, "a", "1.0.0", body, "", nil)
	h2 := mustSpool(t, s, "b", "1.0.0", body, "", nil)
	if h1[:10] == h2[:10] {
		t.Errorf("handles %s and %s share a prefix", h1, h2)
	}
}

func TestSpoolFailsWithoutRandomness(t *testing.T) {
	s := NewStore(bytes.NewReader(make([]byte, 8)))
	if _, err := s.Spool("a", "1.0.0", []byte(body), "", nil); err == nil {
		t.Fatal("Spool with a short random source succeeded")
	}
	// A source repeating itself must not hand out one handle twice.
	s = NewStore(bytes.NewReader(make([]byte, 16*10)))
	mustSpool(t, s, "a", "1.0.0", body, "", nil)
	if h, err := s.Spool("b", "1.0.0", []byte(body), "", nil); err == nil {
		t.Fatalf("second skill got handle %s from a source of zeros", h)
	}
}

// skillDir builds a skill folder with resources, a symlink inside it and
// symlinks pointing out of it.
func skillDir(t *testing.T) (dir string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "skill")
	outside := filepath.Join(root, "secret.txt")
	files := map[string]string{
		"references/api.md": "# API\n\n## fetch\n\nGET /sales\n",
		"data.csv":          "week,rows\r\n2026-W48,1204\r\n",
		"scripts/run.sh":    "#!/bin/sh\necho run\n",
	}
	for p, text := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("password"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"inside-link.md": "references/api.md",
		"escape.txt":     "../secret.txt",
		"abs-escape.txt": outside,
		"dirlink":        root,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	return dir
}

func TestResources(t *testing.T) {
	dir := skillDir(t)
	res := []string{"references/api.md", "data.csv", "./scripts/run.sh", "inside-link.md", "escape.txt", "abs-escape.txt", "dirlink/secret.txt", "missing.md", "references"}
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", body, dir, res)
	tests := []struct {
		tool, path, extra string
		want              string // answer, or "ERROR: " and the message
	}{
		{"artifact_md", "references/api.md", `,"get":"headings"`, "1: # API\n3: ## fetch\n"},
		{"artifact_md", "references/api.md", `,"get":"section","heading":"fetch"`, "[section \"API > fetch\", lines 3-5]\n## fetch\n\nGET /sales\n"},
		{"artifact_read", "data.csv", `,"get":"head"`, "week,rows\n2026-W48,1204\n"},
		{"artifact_read", "scripts/run.sh", `,"get":"grep","pattern":"echo"`, "2:echo run\n"},
		{"artifact_md", "inside-link.md", `,"get":"headings"`, "1: # API\n3: ## fetch\n"},
		{"artifact_md", "data.csv", `,"get":"headings"`, "ERROR: artifact_md reads markdown, and data.csv is not markdown; use artifact_read (get head, grep or cat)"},
		{"artifact_read", "escape.txt", `,"get":"cat"`, `ERROR: artifact_read cat: resource "escape.txt" resolves outside the skill folder; it is not readable`},
		{"artifact_read", "abs-escape.txt", `,"get":"cat"`, `ERROR: artifact_read cat: resource "abs-escape.txt" resolves outside the skill folder; it is not readable`},
		{"artifact_read", "dirlink/secret.txt", `,"get":"cat"`, `ERROR: artifact_read cat: resource "dirlink/secret.txt" resolves outside the skill folder; it is not readable`},
		{"artifact_read", "missing.md", `,"get":"cat"`, `ERROR: artifact_read cat: resource "missing.md" does not exist in the skill folder`},
		{"artifact_read", "references", `,"get":"cat"`, `ERROR: artifact_read cat: resource "references" is not a regular file`},
		{"artifact_read", "../secret.txt", `,"get":"cat"`, `ERROR: artifact_read cat: resource path "../secret.txt" may not contain ".."`},
		{"artifact_read", "references/../../secret.txt", `,"get":"cat"`, `ERROR: artifact_read cat: resource path "references/../../secret.txt" may not contain ".."`},
		{"artifact_read", "/etc/passwd", `,"get":"cat"`, `ERROR: artifact_read cat: resource path "/etc/passwd" must be a relative slash path inside the skill folder`},
		{"artifact_read", `references\api.md`, `,"get":"cat"`, `ERROR: artifact_read cat: resource path "references\\api.md" must be a relative slash path inside the skill folder`},
		{"artifact_read", "SKILL.md", `,"get":"cat"`, `ERROR: artifact_read cat: skill weekly has no resource "SKILL.md"; its resources are: abs-escape.txt, data.csv, dirlink/secret.txt, escape.txt, inside-link.md, missing.md, references, references/api.md, scripts/run.sh`},
	}
	forSurfaces(t, func(t *testing.T, sf surface) {
		for _, tt := range tests {
			testResource(t, sf, s, h, tt.tool, tt.path, tt.extra, tt.want)
		}
	})
}

func testResource(t *testing.T, sf surface, s *Store, h, tool, path, extra, want string) {
	tt := struct{ tool, path, extra, want string }{tool, path, extra, want}
	{
		t.Run(tt.tool+" "+tt.path, func(t *testing.T) {
			args := fmt.Sprintf(`{"handle":%q,"path":%q%s}`, h, tt.path, tt.extra)
			text, skill, err := sf.call(s, tt.tool, json.RawMessage(args), allLoaded)
			got := text
			if err != nil {
				got = "ERROR: " + err.Error()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if skill != "weekly" {
				t.Errorf("skillID = %q, want weekly", skill)
			}
			if strings.Contains(got, "password") {
				t.Errorf("a reader showed the secret outside the skill folder")
			}
		})
	}
}

func TestSpoolRejectsEscapingResources(t *testing.T) {
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "", ".", `a\b`, "a/.."} {
		s := NewStore(seeded(1))
		if h, err := s.Spool("weekly", "1.0.0", []byte(body), t.TempDir(), []string{p}); err == nil {
			t.Errorf("Spool accepted resource %q (handle %s)", p, h)
		}
	}
}

// A huge pattern is refused before compiling, and no pattern makes a
// search run away: RE2 is linear in the input. The test has no clock; a
// backtracking engine would not finish within the test timeout.
func TestGrepCannotRunAway(t *testing.T) {
	long := strings.Repeat("a", 200_000) + "!\n"
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", strings.Repeat(long, 5), "", nil)
	huge := strings.Repeat("(a|b)", 20_000) // 100 KB
	_, err := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"grep","handle":%q,"pattern":%q}`, h, huge))
	if err == nil || !strings.Contains(err.Error(), "at most 1000 are allowed") {
		t.Errorf("100 KB pattern: err = %v, want the length cap", err)
	}
	for _, pat := range []string{`(a+)+$`, `(a|aa)*b`, `(a*)*c`, `^(a?){50}a{50}$`} {
		text, err := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"grep","handle":%q,"pattern":%q}`, h, pat))
		if err != nil {
			t.Errorf("%s: %v", pat, err)
		}
		if len(text) > MaxOutput+200 {
			t.Errorf("%s: answer of %d bytes exceeds the bound", pat, len(text))
		}
	}
	// Lines are cut in grep output, so one matching 200 KB line stays small.
	text, _ := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"grep","handle":%q,"pattern":"!$"}`, h))
	if len(text) > 5*(MaxLineShown+20)+100 {
		t.Errorf("grep of long lines answered %d bytes", len(text))
	}
}
