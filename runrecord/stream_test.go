package runrecord_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsdrun/fsd/internal/fanout"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
)

// streamGens reads every generator of the record in dir through a Stream.
func streamGens(t *testing.T, dir string) (*runrecord.Stream, []*runrecord.Gen) {
	t.Helper()
	s, err := runrecord.OpenStream(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var gens []*runrecord.Gen
	for i := range s.Gens {
		g, err := s.Read(i)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	return s, gens
}

// sameAsOpen fails unless the Stream of dir reads what Open reads, and
// its index adds up what the generators hold.
func sameAsOpen(t *testing.T, dir string) {
	t.Helper()
	rec, err := runrecord.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, gens := streamGens(t, dir)
	if d := cmp.Diff(rec.Gens, gens); d != "" {
		t.Errorf("generators differ (-Open +Stream):\n%s", d)
	}
	if d := cmp.Diff(rec.Summary, s.Summary); d != "" {
		t.Errorf("summary differs (-Open +Stream):\n%s", d)
	}
	for i, g := range gens {
		gi := s.Gens[i]
		in, out, reqs := 0, 0, 0
		for _, st := range g.Steps {
			if st.Usage != nil {
				in, out = in+st.Usage.InputTokens, out+st.Usage.OutputTokens
			}
			if !st.Reconstructed {
				reqs++
			}
		}
		if gi.Name != g.Name || gi.In != in || gi.Out != out || gi.Requests != reqs || gi.StepCount(0) != reqs {
			t.Errorf("%s: indexed %+v, read in %d out %d requests %d", g.Name, gi, in, out, reqs)
		}
	}
}

// G4: a Stream reads each generator as Open does — requests rebuilt,
// responses attached, a remote task's steps from its transcript, a torn
// tail skipped.
func TestStreamReadsWhatOpenReads(t *testing.T) {
	for _, tc := range rebuildCases {
		t.Run(tc.name, func(t *testing.T) {
			rec, _ := runExample(t, tc.path, tc.maxMessages)
			sameAsOpen(t, rec.Dir)
		})
	}
	t.Run("remote and torn", func(t *testing.T) {
		rec, _ := runExample(t, "../examples/fanout/fanout.workflow.yaml", 0)
		dropRequests(t, rec.Dir, "north", `{"kind":"request","gen":"transcr`)
		jpath := filepath.Join(rec.Dir, runrecord.JournalFile)
		j, err := os.ReadFile(jpath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jpath, append(j, `{"gen":"task","task":"north","entry`...), 0o644); err != nil {
			t.Fatal(err)
		}
		sameAsOpen(t, rec.Dir)
	})
}

// fanoutRecord runs the fan-out of n tasks and returns its record's
// folder.
func fanoutRecord(t *testing.T, n int) string {
	t.Helper()
	path, err := fanout.Write(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := runExample(t, path, 0)
	return rec.Dir
}

// G4: reading one generator costs that generator, however many the run
// has: reading a task of a 400-task run allocates no more than reading
// the same task of a 20-task run.
func TestStreamReadCostsOneGenerator(t *testing.T) {
	allocs := func(n int) float64 {
		s, err := runrecord.OpenStream(fanoutRecord(t, n))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		i := -1
		for j, g := range s.Gens {
			if g.Task == "t3" {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("no generator of t3 among %d", len(s.Gens))
		}
		return testing.AllocsPerRun(20, func() {
			if _, err := s.Read(i); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A read of the whole run would allocate about twenty times more in
	// the larger run; a margin absorbs the few allocations sync.Pool
	// adds when it drops items, as it does at random under -race.
	small, large := allocs(20), allocs(400)
	if large > small*1.25 {
		t.Errorf("reading one task allocates %v times in a 400-task run, %v in a 20-task run", large, small)
	}
}

// sameStream fails unless s, refreshed, indexes and reads what a Stream
// opened now on its record does.
func sameStream(t *testing.T, s *runrecord.Stream) {
	t.Helper()
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	fresh, err := runrecord.OpenStream(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if d := cmp.Diff(fresh.Gens, s.Gens, cmpopts.IgnoreUnexported(runrecord.GenInfo{})); d != "" {
		t.Fatalf("index differs (-opened +refreshed):\n%s", d)
	}
	if d := cmp.Diff(fresh.Summary, s.Summary); d != "" {
		t.Errorf("summary differs (-opened +refreshed):\n%s", d)
	}
	for i := range fresh.Gens {
		want, err := fresh.Read(i)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Read(i)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s differs (-opened +refreshed):\n%s", want.Name, d)
		}
	}
}

// G9: a Stream kept while its record grows reads, once refreshed, what a
// Stream opened then reads: the lines appended are indexed (a torn last
// line again once whole, new generators in their places), and a file
// replaced or cut is indexed again.
func TestStreamRefresh(t *testing.T) {
	done := fanoutRecord(t, 30)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(done)); err != nil {
		t.Fatal(err)
	}
	whole := map[string][]byte{}
	for _, name := range []string{runrecord.JournalFile, runrecord.RequestsFile} {
		b, err := os.ReadFile(filepath.Join(done, name))
		if err != nil {
			t.Fatal(err)
		}
		whole[name] = b
	}
	// The record as it was mid-run, running: each file cut inside a
	// line, the journal behind the requests (it may lag them: a request
	// of a generator it does not have yet waits for it).
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cut := map[string]int{runrecord.JournalFile: len(whole[runrecord.JournalFile])/4 + 7, runrecord.RequestsFile: len(whole[runrecord.RequestsFile])/2 + 7}
	for name, b := range whole {
		write(name, b[:cut[name]])
	}
	sum, err := runrecord.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum.Status, sum.PID, sum.Cost = runrecord.Running, os.Getpid(), 0
	sum.SetUsage(model.Usage{}) // a running run's run.json has none yet
	b, _ := json.Marshal(sum)
	write(runrecord.RunFile, b)
	lock, err := journal.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	s, err := runrecord.OpenStream(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := len(s.Gens)
	// Grown in place, as the writer appends.
	for name, b := range whole {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b[cut[name]:]); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	sameStream(t, s)
	if len(s.Gens) <= before {
		t.Fatalf("the grown record has %d generators, the cut one %d", len(s.Gens), before)
	}
	// A running run's usage is what its calls used so far.
	if run, err := runrecord.ReadRun(dir); err != nil || run.Usage() != s.Summary.Usage() || run.Cost != s.Summary.Cost || run.InputTokens == 0 {
		t.Errorf("the index's usage %+v (cost %v), the run's %+v (cost %v) %v", s.Summary.Usage(), s.Summary.Cost, run.Usage(), run.Cost, err)
	}
	// Replaced by a file as long, its lines in another order.
	lines := bytes.SplitAfter(whole[runrecord.JournalFile], []byte("\n"))
	slices.Reverse(lines)
	tmp := filepath.Join(dir, "journal.tmp")
	if err := os.WriteFile(tmp, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, runrecord.JournalFile)); err != nil {
		t.Fatal(err)
	}
	sameStream(t, s)
	// Cut in place.
	write(runrecord.RequestsFile, whole[runrecord.RequestsFile][:len(whole[runrecord.RequestsFile])/3])
	sameStream(t, s)
}
