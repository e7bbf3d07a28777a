package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/spec"
)

// validateFormats are the output formats of `fsd validate`.
var validateFormats = []string{"text", "json", "github", "sarif"}

func newValidateCmd() *cobra.Command {
	var format string
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check skills and workflows: schema, references, dependency cycles",
		Long: `Validate skill manifests (*.skill.yaml, skill.yaml, SKILL.md) and workflows
(*.workflow.yaml, workflow.yaml, or any YAML file named explicitly) against
fsd's schemas and semantic checks. Folders are searched recursively; a
workflow's skills are checked with it. Every problem is reported at once, as
file:line:col: message [kind].

Exit status: 0 valid (warnings allowed), 1 problems found, 2 bad usage.
Unknown SKILL.md frontmatter keys are warnings; --strict makes them errors.`,
		Example: `  fsd validate .
  fsd validate --format github skills/ *.workflow.yaml   # annotations in a GitHub Actions job
  fsd validate --strict --format sarif . > fsd.sarif`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage("give at least one file or folder to check, e.g. fsd validate .")
			}
			if !contains(validateFormats, format) {
				return usage("unknown --format %q; want %s", format, strings.Join(validateFormats, ", "))
			}
			for _, p := range args {
				if err := pathArg(p); err != nil {
					return err
				}
			}
			files, diags := spec.ValidateFiles(args, strict, natsboard.CheckWorkflow)
			out := cmd.OutOrStdout()
			var err error
			switch format {
			case "json":
				err = writeJSON(out, files, diags)
			case "github":
				err = writeGitHub(out, diags)
			case "sarif":
				err = writeSARIF(out, diags)
			default:
				err = writeText(out, diags, isTerminal(out))
			}
			if err != nil {
				return fail(exitInternal, "writing the output: %v", err)
			}
			errs, warns := count(diags)
			if format == "text" && errs == 0 {
				// What the valid skills cost listed in a catalog.
				if c, ids := validatedCatalog(files); len(ids) > 0 {
					writeCatalogCost(cmd.ErrOrStderr(), c, ids)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s, %s, %s\n", plural(len(files), "file"), plural(errs, "error"), plural(warns, "warning"))
			if errs > 0 {
				return &exitError{code: exitProblems}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: "+strings.Join(validateFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(validateFormats, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings (unknown SKILL.md frontmatter keys) as errors")
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func count(l diag.List) (errs, warns int) {
	for _, d := range l {
		if d.Severity == diag.Error {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeText prints one diagnostic a line; for a terminal, each is followed
// by its source line and a caret under the column, as compilers do.
func writeText(w io.Writer, diags diag.List, source bool) error {
	lines := map[string][]string{}
	for _, d := range diags {
		if _, err := fmt.Fprintln(w, d.String()); err != nil {
			return err
		}
		if !source {
			continue
		}
		if line, ok := sourceLine(lines, d.Pos); ok {
			fmt.Fprintf(w, "    %s\n    %s^\n", line, caretPad(line, d.Pos.Col))
		}
	}
	return nil
}

// sourceLine returns line pos.Line of pos.File, caching files read. Lines
// too long to be useful on a terminal are skipped.
func sourceLine(cache map[string][]string, pos diag.Pos) (string, bool) {
	lines, ok := cache[pos.File]
	if !ok {
		if st, err := os.Stat(pos.File); err == nil && st.Mode().IsRegular() && st.Size() <= spec.MaxWorkflowSize {
			if data, err := os.ReadFile(pos.File); err == nil {
				lines = strings.Split(string(data), "\n")
			}
		}
		cache[pos.File] = lines
	}
	if pos.Line < 1 || pos.Line > len(lines) {
		return "", false
	}
	line := strings.TrimRight(lines[pos.Line-1], "\r")
	if len(line) > 300 || strings.ContainsRune(line, 0) {
		return "", false
	}
	return line, true
}

// caretPad is the indentation that puts a caret under column col (counted
// in characters), keeping tabs so the caret lines up with the source.
func caretPad(line string, col int) string {
	var b strings.Builder
	i := 1
	for _, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	return b.String()
}

type jsonDiag struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Severity string `json:"severity"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

func writeJSON(w io.Writer, files []string, diags diag.List) error {
	errs, warns := count(diags)
	out := struct {
		Files       []string   `json:"files"`
		Errors      int        `json:"errors"`
		Warnings    int        `json:"warnings"`
		Diagnostics []jsonDiag `json:"diagnostics"`
	}{Files: files, Errors: errs, Warnings: warns, Diagnostics: []jsonDiag{}}
	if out.Files == nil {
		out.Files = []string{}
	}
	for _, d := range diags {
		out.Diagnostics = append(out.Diagnostics, jsonDiag{d.Pos.File, d.Pos.Line, d.Pos.Col, d.Severity.String(), d.Kind, d.Message, d.Hint})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeGitHub prints GitHub Actions workflow commands, which show as
// annotations on the pull request's files.
func writeGitHub(w io.Writer, diags diag.List) error {
	for _, d := range diags {
		msg := d.Message
		if d.Hint != "" {
			msg += "; " + d.Hint
		}
		_, err := fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,title=fsd %s::%s\n",
			d.Severity, ghProperty(filepath.ToSlash(d.Pos.File)), d.Pos.Line, d.Pos.Col, ghProperty(d.Kind), ghData(msg))
		if err != nil {
			return err
		}
	}
	return nil
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// writeSARIF prints a SARIF 2.1.0 log, the format code-scanning uploads
// (github/codeql-action/upload-sarif) take. Each diagnostic kind is a rule.
func writeSARIF(w io.Writer, diags diag.List) error {
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
	}
	type location struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region region `json:"region"`
		} `json:"physicalLocation"`
	}
	type text struct {
		Text string `json:"text"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		Level     string     `json:"level"`
		Message   text       `json:"message"`
		Locations []location `json:"locations"`
	}
	type rule struct {
		ID               string `json:"id"`
		ShortDescription text   `json:"shortDescription"`
	}
	results := []result{}
	kinds := map[string]bool{}
	for _, d := range diags {
		msg := d.Message
		if d.Hint != "" {
			msg += "; " + d.Hint
		}
		kind := d.Kind
		if kind == "" {
			kind = "problem"
		}
		kinds[kind] = true
		var loc location
		loc.PhysicalLocation.ArtifactLocation.URI = filepath.ToSlash(d.Pos.File)
		loc.PhysicalLocation.Region = region{max(d.Pos.Line, 1), max(d.Pos.Col, 1)}
		results = append(results, result{RuleID: kind, Level: d.Severity.String(), Message: text{msg}, Locations: []location{loc}})
	}
	rules := []rule{}
	for k := range kinds {
		rules = append(rules, rule{ID: k, ShortDescription: text{"fsd manifest problem: " + k}})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "fsd",
				"informationUri": "https://github.com/fsdrun/fsd",
				"rules":          rules,
			}},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}
