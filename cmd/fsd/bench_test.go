package main

import (
	"bytes"
	"fmt"
	"testing"

	fanoutwf "github.com/fsdrun/fsd/internal/fanout"
)

// fanoutWorkflow writes what bench/fanout.sh generates: a fan-out of n
// tasks answered at once by the scripted model, joined by one more.
func fanoutWorkflow(b *testing.B, n int) string {
	b.Helper()
	path, err := fanoutwf.Write(b.TempDir(), n)
	if err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkFanout is `fsd run` of a fan-out with its run record, in
// process (bench/fanout.sh runs the binary cold): -cpuprofile and
// -memprofile show where a big run's time and memory go.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, d := range []string{"step", "commit-before-effects"} {
			b.Run(fmt.Sprintf("tasks=%d/durability=%s", n, d), func(b *testing.B) {
				wf := fanoutWorkflow(b, n)
				runs := b.TempDir()
				b.ReportAllocs()
				for b.Loop() {
					var out, errb bytes.Buffer
					if code := run([]string{"run", wf, "--runs-dir", runs, "--durability", d}, &out, &errb); code != exitOK {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
			})
		}
	}
}
