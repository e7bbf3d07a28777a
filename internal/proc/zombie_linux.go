package proc

import (
	"bytes"
	"os"
	"strconv"
)

// exited reports whether pid has exited though it still has a process
// table entry: a zombie its parent has not reaped yet. Signal 0 reaches a
// zombie, but it writes nothing and holds no lock, so the run it wrote
// must be seen as interrupted — in a container whose init never reaps,
// it would otherwise look alive for good.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and
	// may itself hold spaces or parentheses: read after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	s := b[i+2]
	return s == 'Z' || s == 'X'
}
