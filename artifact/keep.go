package artifact

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
)

// Keep stores bytes a skill's tool produced (an MCP server's image or
// embedded resource) as an artifact of that skill and returns its handle:
// the readers page through it while the skill is loaded, like its body.
// A name ending in .md is indexed as markdown.
//
// In a keyed store (NewKeyedStore) its handle is derived from the skill,
// name and bytes, else it comes from crypto/rand, never from the store's
// seeded source: a resumed run does not call the tool again, and must
// still draw the same handles for skill bodies as the run it resumes.
func (s *Store) Keep(skillID, name string, data []byte) (string, error) {
	return s.keep(&entry{skillID: skillID}, name, data, "")
}

// KeepResult stores a tool result too large for the window and
// returns its handle. skillID "" makes it work (L5): readable for the whole
// run, whatever is loaded; a reader's result passes its skill, so the
// instructions it holds leave with the skill (H4). handle, when not empty,
// is the handle a journal recorded for it: a resumed run keeps it, so the
// model's later reads by that handle replay the same way.
func (s *Store) KeepResult(skillID, name string, data []byte, handle string) (string, error) {
	return s.keep(&entry{skillID: skillID, work: skillID == ""}, name, data, handle)
}

func (s *Store) keep(e *entry, name string, data []byte, handle string) (string, error) {
	e.resources, e.ready = map[string]*resource{}, make(chan struct{})
	e.body = s.newDoc(name, data, isMarkdown(name))
	close(e.ready)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		kind := "kept"
		if e.work {
			kind = "work"
		}
		// A journal of a keyed run recorded this very handle; one of a
		// run with drawn handles, another, kept as recorded below.
		if h, id := handleOf(s.key, kind, data, e.skillID, name); handle == "" || handle == h {
			h, err := s.claim(e, h, id)
			if err != nil {
				return "", fmt.Errorf("keep %s: %w", name, err)
			}
			return h, nil
		}
	}
	if handle != "" {
		if _, taken := s.byHandle[handle]; taken || !validHandle(handle) {
			return "", fmt.Errorf("keep %s: handle %q is taken or malformed", name, handle)
		}
		e.handle = handle
		s.byHandle[handle] = e
		return handle, nil
	}
	var b [16]byte
	for range 4 {
		if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
			return "", fmt.Errorf("keep %s: draw handle: %w", name, err)
		}
		h := "h_" + hex.EncodeToString(b[:])
		if _, taken := s.byHandle[h]; !taken {
			e.handle = h
			s.byHandle[h] = e
			return h, nil
		}
	}
	return "", fmt.Errorf("keep %s: random source keeps repeating itself", name)
}

// validHandle reports whether h has the form of a drawn handle.
func validHandle(h string) bool {
	if len(h) != 2+32 || h[:2] != "h_" {
		return false
	}
	_, err := hex.DecodeString(h[2:])
	return err == nil
}
