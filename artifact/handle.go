package artifact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// MinKeyBytes is the shortest handle key NewKeyedStore takes: HMAC-SHA-256
// wants at least its output's length to be as strong as the hash.
const MinKeyBytes = 32

// NewKeyedStore returns an empty store whose handles are derived from
// what they stand for, keyed with key: HMAC-SHA-256 under key of the
// artifact's kind, owner, name and the SHA-256 of its bytes, cut to 128
// bits. The same content gets the same handle in every store with the
// same key (so two runs of one project send the same requests, and a
// provider's prompt cache serves the second from the first), different
// content a different handle, and without key nobody — a model, another
// project — can tell a handle from random or compute one.
func NewKeyedStore(key []byte) (*Store, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("artifact: handle key is %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	s := NewStore(nil)
	s.key = append([]byte(nil), key...)
	return s, nil
}

// Key is the key a keyed store derives handles with, for a worker in
// another process to derive the same ones; nil for a store that draws
// them.
func (s *Store) Key() []byte {
	if s == nil {
		return nil
	}
	return s.key
}

// handleOf is the keyed handle of an artifact: kind says what it is (a
// skill body, a tool's output, a kept result), so two kinds of artifact
// with the same bytes never share a handle; parts name it (skill id,
// version, resource paths, file name). Every part is length-prefixed, so
// no two different lists of parts encode alike; the body's digest comes
// last and has a fixed length. It returns the handle and what it was
// derived from (identity), which tells a shared handle from a collision.
//
// K1: a keyed handle is a function of the key and what it stands for.
func handleOf(key []byte, kind string, body []byte, parts ...string) (handle, identity string) {
	var id []byte
	var n [8]byte
	for _, p := range append([]string{"fsd artifact handle", kind}, parts...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		id = append(append(id, n[:]...), p...)
	}
	sum := sha256.Sum256(body)
	id = append(id, sum[:]...)
	m := hmac.New(sha256.New, key)
	m.Write(id)
	return "h_" + hex.EncodeToString(m.Sum(nil)[:16]), string(id)
}

// errCollision is two different artifacts derived to one handle: with a
// 128-bit HMAC this does not happen, and if it did, serving either under
// the other's handle would be wrong.
var errCollision = errors.New("two different artifacts derived the same handle")

// claim puts e under a keyed handle, with s.mu held. The same artifact
// kept twice (a tool that returns the same bytes again) gets the handle it
// has; a different one under a taken handle is errCollision.
func (s *Store) claim(e *entry, h, identity string) (string, error) {
	if old, taken := s.byHandle[h]; taken {
		if old.identity != identity {
			return "", errCollision
		}
		return h, nil
	}
	e.handle, e.identity = h, identity
	s.byHandle[h] = e
	return h, nil
}
