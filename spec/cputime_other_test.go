//go:build !unix

package spec

import "time"

// cpuTime is unknown off unix; the per-CPU-second rate is then not reported.
func cpuTime() time.Duration { return 0 }
