package ui

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/runrecord"
)

// Report writes the run page of rec as one self-contained HTML file:
// styles, script and the run's data inline, nothing fetched. secrets are
// masked.
func Report(w io.Writer, rec *runrecord.Record, secrets []string) error {
	data, err := json.Marshal(View(rec, time.Now()))
	if err != nil {
		return err
	}
	data = redact.New(secrets...).Bytes(data)
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return err
	}
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		return err
	}
	// JSON inside a script element: "</" must not end it early.
	safe := strings.ReplaceAll(string(data), "</", `<\/`)
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pageData{Kind: "run", RunID: rec.Summary.ID, Inline: true,
		CSS: template.CSS(css), JS: template.JS(js), Data: template.JS(safe)}); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
