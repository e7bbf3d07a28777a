package runrecord

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// HandleKeyFile is the name of a project's handle key in its
// ProjectFolder: .fsd/handle.key.
const HandleKeyFile = "handle.key"

// HandleKey reads the handle key of the project whose ProjectFolder is
// dir (.fsd), making it (random, mode 0600, in a folder of mode 0700) the
// first time. The engine derives a run's artifact handles from what they
// stand for under it (engine.Options.HandleKey): every run of the project
// gives the same skill the same handle, while nobody without the key can
// compute or guess one. It is never written into a record, an event or a
// log. Two processes making it at once end with the same key.
//
// K2: the key file, made once, mode 0600.
//
// A project folder fsd cannot write (a read-only checkout) has no key:
// the error says why, and runs there draw their handles as before, new
// every run.
func HandleKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, HandleKeyFile)
	k, err := readHandleKey(path)
	if errors.Is(err, os.ErrNotExist) {
		if err = makeKey(path); err == nil || errors.Is(err, os.ErrExist) {
			k, err = readHandleKey(path)
		}
		if err == nil {
			ignoreFolder(dir)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("handle key: %w", err)
	}
	return k, nil
}

func readHandleKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := hex.DecodeString(string(trimSpace(b)))
	if err != nil || len(k) < keyBytes {
		return nil, fmt.Errorf("%s is not a key fsd wrote (want %d hex digits); remove it to make a new one (runs started with it will not resume)", path, 2*keyBytes)
	}
	return k, nil
}

// ignoreFolder writes a .gitignore of "*" into the project folder unless
// one is there: the folder holds the handle key and the runs' records, and
// a `git add .` of the project must not publish them. Best effort: a
// folder fsd could write a key into takes the file too, and one that has
// its own .gitignore keeps it.
//
// K7: the project folder ignores itself.
func ignoreFolder(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString("# fsd's handle key and run records: never in version control\n*\n")
	_ = f.Close()
}
