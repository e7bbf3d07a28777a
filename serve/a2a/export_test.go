package a2a

import "net/http"

// Kept is how many tasks the handler h holds in memory.
func Kept(h http.Handler) int {
	x := h.(*handler)
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.tasks)
}
