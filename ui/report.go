package ui

import (
	"io"
	"time"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/runrecord"
)

// Report writes the run page of rec as one self-contained HTML file:
// styles, script and the run's data inline, nothing fetched. secrets are
// masked. WriteReport writes the same page from a record on disk without
// holding it whole.
func Report(w io.Writer, rec *runrecord.Record, secrets []string) error {
	return report(w, rec, secrets, time.Now())
}

func report(w io.Writer, rec *runrecord.Record, secrets []string, now time.Time) error {
	head, tail, err := reportShell(rec.Summary.ID)
	if err != nil {
		return err
	}
	jw := &jsonWriter{w: w, mask: redact.New(secrets...)}
	jw.raw(head)
	jw.value(View(rec, now))
	jw.raw(tail)
	return jw.err
}
