// Package keytest gives a test binary a run record key of its own (the
// key runrecord.UserKey makes in the user's configuration folder), so
// tests never make or read the key of the user who runs them. Child
// processes the tests start inherit it.
package keytest

import (
	"fmt"
	"os"
	"testing"
)

// Main runs m with XDG_CONFIG_HOME (where runrecord.KeyFile is) in a
// temporary folder, removed afterwards; call it from TestMain as
// os.Exit(keytest.Main(m)).
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fsd-key-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "keytest:", err)
		return 3
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_CONFIG_HOME", dir)
	return m.Run()
}
