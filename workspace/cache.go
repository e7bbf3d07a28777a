package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Cache opens workspaces as Open does (hiding nothing) and keeps those it
// opened: a worker opens its run's workspace for every task it runs, and
// Open's checks cost a system call or more per folder of the path. A kept
// workspace is given again only while its folder, and the folder its
// symlinks led to when it was opened, are still that same folder (one
// stat each); otherwise it is opened anew, made again if it was removed.
// A nil Cache opens every time.
//
// U16: a kept workspace is what Open would return.
type Cache struct {
	mu   sync.Mutex
	kept map[string]kept
}

// cacheSize bounds the workspaces a Cache keeps: a worker's runs come and
// go, and one that runs for months must not keep each run's.
const cacheSize = 64

type kept struct {
	ws     *Workspace
	folder os.FileInfo // what ws.dir was when ws was opened
}

// Open is Open(dir) for an absolute dir, from the cache while it holds.
func (c *Cache) Open(dir string) (*Workspace, error) {
	if c == nil || !filepath.IsAbs(dir) {
		return Open(dir)
	}
	c.mu.Lock()
	k, ok := c.kept[dir]
	c.mu.Unlock()
	if ok && k.holds() {
		return k.ws, nil
	}
	// Kept for as long as the cache lives: dir may be a piece of a larger
	// string (a worker's task message), which it must not keep alive.
	dir = strings.Clone(dir)
	ws, err := Open(dir)
	if err != nil {
		return nil, err
	}
	k = kept{ws: ws}
	if k.folder, err = os.Stat(ws.real); err == nil && k.holds() {
		c.mu.Lock()
		if c.kept == nil || len(c.kept) >= cacheSize {
			c.kept = make(map[string]kept)
		}
		c.kept[dir] = k
		c.mu.Unlock()
	}
	return ws, nil
}

// holds reports whether the workspace's folder is still the folder it
// was opened as, and so is the path its symlinks led to: Open would find
// the same folder and, a folder having one parent, resolve its path to
// the same real path (or, had the folder moved, to another: then the old
// path no longer names it, and the stat of it fails or differs). A
// folder whose path had no symlink must still be no symlink itself (an
// lstat): moved away and replaced by a link to where it went, it is the
// same folder under another real path. A folder above it so replaced is
// not seen; the kept real path is then the old one, and a path under the
// new one is refused as outside the workspace, never let through.
func (k kept) holds() bool {
	stat := os.Stat
	if k.ws.real == k.ws.dir {
		stat = os.Lstat
	}
	st, err := stat(k.ws.dir)
	if err != nil || !st.IsDir() || !os.SameFile(st, k.folder) {
		return false
	}
	if k.ws.real == k.ws.dir {
		return true
	}
	st, err = os.Stat(k.ws.real)
	return err == nil && os.SameFile(st, k.folder)
}
