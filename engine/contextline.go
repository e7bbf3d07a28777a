package engine

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/spec"
)

// Context lines are what the model reads in its window about skills
// entering and leaving the context (contextChanged entries, L5, C4). They
// are rendered once, when the change happens, and stored on the entry, so
// the record shows exactly what the model saw and a resumed run replays the
// same bytes. The exact forms (docs/behaviour.md, docs/design.md):
//
//	[fsd context] loaded skill ID VERSION (read; channel inline)
//	  instructions (first N of M characters): "…"
//	[fsd context] loaded skill ID VERSION (read; channel handle, handle H)
//	  pointer: "<skill id=… channel=\"handle\" handle=… trust=…/>"
//	[fsd context] skill ID VERSION is the active skill again (read again; nothing new loaded)
//	[fsd context] unloaded skill ID VERSION (evicted: at most N skills stay loaded and it was the least recently read; read_skill it again to use it)
//	[fsd context] unloaded skill ID VERSION (disabled: it is no longer enabled in this project; its tools are gone)
//	[fsd context] unloaded skill ID VERSION (version changed: NEW is on disk now; read_skill it again to load it)
//
// A load that evicts writes the unload lines first, then the load line, in
// one message.
//
// The quote on a load line (its last line) is the first N characters of
// what the load added to the context block: an inline skill's body, a
// handle skill's pointer — a handle's body reaches the model only through
// a reader call (H1). N is the skill's preview (spec.PreviewOf); 0 quotes
// nothing. Unload lines quote nothing, and a quote leaves later requests
// once its skill is disabled or changes revision (unquote): an old
// instruction must not go on steering the model.
const linePrefix = "[fsd context] "

// loadLine renders a load: the pointer's or envelope's fields on the first
// line, then the quote of what the load added (quoted says whether there
// is one, for the entry's Quotes). added is the body or the pointer.
//
// C8: the quote is what the load added, never a handle's body.
func loadLine(l *loadedSkill, added string, n int) (line string, quoted bool) {
	s := l.skill
	var b strings.Builder
	fmt.Fprintf(&b, "%sloaded skill %s %s (read; channel %s", linePrefix, s.ID, s.Revision(), l.channel)
	label := "instructions"
	if l.handle != "" {
		fmt.Fprintf(&b, ", handle %s", l.handle)
		label = "pointer"
	}
	b.WriteString(")")
	added = strings.TrimSpace(added)
	if added == "" {
		fmt.Fprintf(&b, "\n  %s: none", label)
		return b.String(), false
	}
	if n <= 0 {
		return b.String(), false
	}
	head, total := preview(added, n)
	if len(head) < len(added) {
		fmt.Fprintf(&b, "\n  %s (first %d of %d characters): %s", label, n, total, strconv.Quote(head))
	} else {
		fmt.Fprintf(&b, "\n  %s: %s", label, strconv.Quote(head))
	}
	return b.String(), true
}

// quoteOf names the skill a load line quotes, for Message.Quotes.
func quoteOf(s *spec.Skill) string { return s.ID + "@" + s.Revision() }

// unquote returns a context line without the quote on its last line.
func unquote(text string) string {
	if i := strings.LastIndex(text, "\n  "); i >= 0 {
		return text[:i]
	}
	return text
}

// rereadLine renders a read of a skill that was loaded already.
func rereadLine(s *spec.Skill) string {
	return fmt.Sprintf("%sskill %s %s is the active skill again (read again; nothing new loaded)", linePrefix, s.ID, s.Revision())
}

// evictedLine renders an eviction to make room (L1).
func evictedLine(s *spec.Skill, max int) string {
	return fmt.Sprintf("%sunloaded skill %s %s (evicted: at most %d skills stay loaded and it was the least recently read; read_skill it again to use it)",
		linePrefix, s.ID, s.Revision(), max)
}

// disabledLine renders an unload because the skill left the catalog (C4).
func disabledLine(s *spec.Skill) string {
	return fmt.Sprintf("%sunloaded skill %s %s (disabled: it is no longer enabled in this project; its tools are gone)", linePrefix, s.ID, s.Revision())
}

// versionLine renders an unload because the manifest on disk changed
// version (C4).
func versionLine(s *spec.Skill, now string) string {
	return fmt.Sprintf("%sunloaded skill %s %s (version changed: %s is on disk now; read_skill it again to load it)",
		linePrefix, s.ID, s.Revision(), now)
}

// preview returns the first n characters (runes) of s and how many s has.
func preview(s string, n int) (string, int) {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s, total
	}
	i, k := 0, 0
	for i = range s {
		if k == n {
			break
		}
		k++
	}
	return s[:i], total
}
