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
// Its handle comes from crypto/rand, never from the store's seeded source:
// a resumed run does not call the tool again, and must still draw the same
// handles for skill bodies as the run it resumes.
func (s *Store) Keep(skillID, name string, data []byte) (string, error) {
	e := &entry{skillID: skillID, resources: map[string]*resource{}, ready: make(chan struct{})}
	e.body = s.newDoc(name, data, isMarkdown(name))
	close(e.ready)
	var b [16]byte
	s.mu.Lock()
	defer s.mu.Unlock()
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
