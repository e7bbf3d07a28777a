//go:build unix

package spec

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report a rate
// per CPU-second too, because on a shared machine wall time also counts
// other processes' turns on the core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
