// Package runrecord reads a run record — the folder `fsd run` leaves under
// .fsd/runs/<run-id>/ — and owns the layout of the parts others read:
// file names, run.json, and requests.jsonl (what each model call was sent).
//
// The engine writes a record; everything that reads one (fsd show, fsd
// runs, fsd ui, fsd report) reads it through this package, so a change of
// the format is made in one place. It does not run anything and does not
// resume runs (the engine's Journal does).
package runrecord
