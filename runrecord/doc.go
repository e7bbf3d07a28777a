// Package runrecord owns the run record — the folder `fsd run` leaves
// under .fsd/runs/<run-id>/: its layout (file names, run.json with the
// run's Status, requests.jsonl, the journal's lines), its Writer and its
// readers.
//
// The engine writes a record through Writer, and everything that reads
// one (fsd show, fsd runs, fsd ui, fsd report, a resume) reads it through
// this package, so a change of the format is made in one place. Open
// reads a record whole; OpenTask one task's lines, and Stream one
// generator at a time, for readers of a large run; a Stream kept between
// reads (Refresh) and a File read where it left off follow a live run at
// the cost of what it wrote since. It does
// not run anything and does not resume runs: a resume replays what
// Writer wrote through the engine's Replay.
package runrecord
