package artifact

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func keyed(t *testing.T, key string) *Store {
	t.Helper()
	s, err := NewKeyedStore([]byte(strings.Repeat(key, MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Keyed handles are derived from what they stand for: the same content
// under the same key gets the same handle in every store (two runs of one
// project), anything else another one, and the handle shows nothing of
// the content.
func TestKeyedHandles(t *testing.T) {
	form := regexp.MustCompile(`^h_[0-9a-f]{32}$`)
	spool := func(s *Store, id, version, text string, res ...string) string {
		return mustSpool(t, s, id, version, text, t.TempDir(), res)
	}
	a := spool(keyed(t, "k"), "weekly-report", "1.2.0", body)
	if b := spool(keyed(t, "k"), "weekly-report", "1.2.0", body); a != b {
		t.Errorf("one skill under one key: handles %s and %s, want one", a, b)
	}
	if !form.MatchString(a) || strings.Contains(a, "weekly") || strings.Contains(a, "7765656b6c79") {
		t.Errorf("keyed handle %q is not h_ and 32 hex digits, or shows the skill id", a)
	}
	others := map[string]string{
		"another key":      spool(keyed(t, "x"), "weekly-report", "1.2.0", body),
		"another skill":    spool(keyed(t, "k"), "weekly", "1.2.0", body),
		"another version":  spool(keyed(t, "k"), "weekly-report", "1.2.1", body),
		"another body":     spool(keyed(t, "k"), "weekly-report", "1.2.0", body+"\n"),
		"with a resource":  spool(keyed(t, "k"), "weekly-report", "1.2.0", body, "notes.md"),
		"id/version split": spool(keyed(t, "k"), "weekly-report1", ".2.0", body),
	}
	seen := map[string]string{a: "the first"}
	for what, h := range others {
		if prev, dup := seen[h]; dup {
			t.Errorf("%s has the handle of %s: %s", what, prev, h)
		}
		seen[h] = what
	}
	if _, err := NewKeyedStore(make([]byte, MinKeyBytes-1)); err == nil {
		t.Error("NewKeyedStore took a key shorter than MinKeyBytes")
	}
}

// A result kept twice with the same bytes may share its handle, in one
// store and across stores with one key; different bytes, another owner or
// another kind of artifact never do. A journaled handle of a drawn run is
// kept as recorded.
func TestKeyedKeep(t *testing.T) {
	s := keyed(t, "k")
	keep := func(s *Store, skill, name, data string) string {
		t.Helper()
		h, err := s.KeepResult(skill, name, []byte(data), "")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := keep(s, "", "result of fetch", "rows")
	if b := keep(s, "", "result of fetch", "rows"); a != b {
		t.Errorf("the same result kept twice: %s and %s, want one handle", a, b)
	}
	if b := keep(keyed(t, "k"), "", "result of fetch", "rows"); a != b {
		t.Errorf("the same result in another store with the key: %s and %s, want one handle", a, b)
	}
	mcp, err := s.Keep("", "result of fetch", []byte("rows"))
	if err != nil {
		t.Fatal(err)
	}
	for what, h := range map[string]string{
		"other bytes":     keep(s, "", "result of fetch", "rows!"),
		"another name":    keep(s, "", "result of list", "rows"),
		"a skill's":       keep(s, "sales", "result of fetch", "rows"),
		"a tool's output": mcp,
	} {
		if h == a {
			t.Errorf("%s got the handle of the first result: %s", what, h)
		}
	}
	drawn := "h_00112233445566778899aabbccddeeff"
	if h, err := s.KeepResult("", "result of fetch", []byte("old"), drawn); err != nil || h != drawn {
		t.Errorf("a journaled drawn handle: %s, %v; want it kept", h, err)
	}
	// Both the result kept again on resume under its keyed handle and
	// reading it work.
	if h, err := s.KeepResult("", "result of fetch", []byte("rows"), a); err != nil || h != a {
		t.Errorf("a journaled keyed handle: %s, %v; want %s", h, err, a)
	}
	text, _, err := s.Call(ToolRead, []byte(`{"get":"cat","handle":"`+a+`"}`), nil)
	if err != nil || !strings.Contains(text, "rows") {
		t.Errorf("reading the kept result: %q, %v", text, err)
	}
}

// Two artifacts that derive one handle are refused, not served for each
// other.
func TestKeyedCollisionRefused(t *testing.T) {
	s := keyed(t, "k")
	h := mustSpool(t, s, "a", "1.0.0", body, "", nil)
	// Stand in for a collision: the taken handle's artifact derived it
	// from something else.
	s.byHandle[h].identity = "something else"
	delete(s.byKey, skillKey{"a", "1.0.0"})
	if _, err := s.Spool("a", "1.0.0", []byte(body), "", nil); !errors.Is(err, errCollision) {
		t.Errorf("a second artifact under a taken handle: %v, want errCollision", err)
	}
}
