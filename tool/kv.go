package tool

import "sync"

// MemKV is a KV in memory, safe for concurrent use.
type MemKV struct {
	mu sync.Mutex
	m  map[string]string
}

// NewMemKV returns an empty MemKV. Its map is made by the first Set: a
// worker gets one for every task, and most tasks keep no state.
func NewMemKV() *MemKV { return &MemKV{} }

// Get returns k's value and whether it is set.
func (s *MemKV) Get(k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok
}

// Set sets k to v.
func (s *MemKV) Set(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[k] = v
}

// Delete unsets k.
func (s *MemKV) Delete(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
}
