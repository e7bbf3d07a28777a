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
//	[fsd context] loaded skill ID VERSION (read; channel handle, handle H)
//	  instructions (first 200 of N characters): "…"
//	[fsd context] skill ID VERSION is the active skill again (read again; nothing new loaded)
//	[fsd context] unloaded skill ID VERSION (evicted: at most N skills stay loaded and it was the least recently read; read_skill it again to use it)
//	[fsd context] unloaded skill ID VERSION (disabled: it is no longer enabled in this project; its tools are gone)
//	[fsd context] unloaded skill ID VERSION (version changed: NEW is on disk now; read_skill it again to load it)
//
// A load that evicts writes the unload lines first, then the load line, in
// one message.
const (
	linePrefix = "[fsd context] "
	// previewChars bounds the preview of what a load put in the context:
	// enough to recognise the skill after it is gone, never its body.
	previewChars = 200
)

// loadLine renders a load: the pointer's or envelope's fields on the first
// line, then the first previewChars characters of the instructions, which
// stay readable in the window after the skill unloads.
func loadLine(l *loadedSkill) string {
	s := l.skill
	var b strings.Builder
	fmt.Fprintf(&b, "%sloaded skill %s %s (read; channel %s", linePrefix, s.ID, s.Revision(), l.channel)
	if l.handle != "" {
		fmt.Fprintf(&b, ", handle %s", l.handle)
	}
	b.WriteString(")")
	body := strings.TrimSpace(s.Instructions)
	if body == "" {
		b.WriteString("\n  instructions: none")
		return b.String()
	}
	head, n := preview(body, previewChars)
	if len(head) < len(body) {
		fmt.Fprintf(&b, "\n  instructions (first %d of %d characters): %s", previewChars, n, strconv.Quote(head))
	} else {
		fmt.Fprintf(&b, "\n  instructions: %s", strconv.Quote(head))
	}
	return b.String()
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
