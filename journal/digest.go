package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
)

// Digests names what a run was made from (the resolved workflow, the
// script, each manifest) and the SHA-256 of each, hex-encoded. Keys are
// how a user would name the thing: "workflow", "script x.script.yaml",
// "skill fetch (skills/fetch/fetch.skill.yaml)".
type Digests map[string]string

// Sum is the hex SHA-256 of b.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// AddFile adds the digest of a file's bytes under key, read as a stream:
// a skill's large resource costs no memory.
func (d Digests) AddFile(key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("digest of %s: %w", key, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("digest of %s: %w", key, err)
	}
	d[key] = hex.EncodeToString(h.Sum(nil))
	return nil
}

// Diff lists, sorted, what differs between the digests a run recorded
// and those of what a resume would run: changed, added and removed keys,
// each a phrase a user can act on. A run recorded without digests (an
// older fsd) has nothing to compare and yields nothing.
//
// R4: each difference is named.
func Diff(recorded, now Digests) []string {
	if len(recorded) == 0 {
		return nil
	}
	var out []string
	for k, v := range recorded {
		w, ok := now[k]
		switch {
		case !ok:
			out = append(out, k+" is gone")
		case v != w:
			out = append(out, k+" changed")
		}
	}
	for k := range now {
		if _, ok := recorded[k]; !ok {
			out = append(out, k+" is new")
		}
	}
	sort.Strings(out)
	return out
}
