package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifest is a realistic generated skill: four tools of every run kind,
// two agents, a page of instructions (about 2.5 KB in all).
func manifest(i int) string {
	return fmt.Sprintf(`# yaml-language-server: $schema=https://raw.githubusercontent.com/fsdrun/fsd/main/schemas/skill.schema.json
id: skill-%[1]d
name: Generated skill %[1]d
description: Builds report number %[1]d from the ledger. Use when asked for report %[1]d or its figures.
version: 1.%[1]d.0
channel: handle
instructions: |
  # Report %[1]d

  ## Steps
  1. Fetch the rows with fetch_rows_%[1]d for the week the user names.
  2. Delegate the summary to the summarizer agent and run the board.
  3. Keep the result with keep_%[1]d.

  ## Figures
  | Figure | How |
  |---|---|
  | Units | sum of units |
  | Revenue | sum of revenue, EUR |
tools:
  - name: fetch_rows_%[1]d
    description: Rows for one ISO week, as CSV.
    input:
      type: object
      properties:
        week: {type: string, description: ISO week such as 2026-W47}
        region: {type: string, enum: [north, south, east, west]}
      required: [week]
    run: {command: [./scripts/fetch.sh, "{{.week}}", "{{.region}}"], timeout: 30s, env: [LEDGER]}
  - name: template_%[1]d
    description: The skeleton of the brief.
    run: {reply: "# Brief {{.week}}"}
  - name: keep_%[1]d
    description: Keep a value for the run.
    input: {type: object, properties: {key: {type: string}, value: {type: string}}, required: [key, value]}
    run: {store: set}
  - name: note_%[1]d
    description: Keep a value while loaded.
    input: {type: object, properties: {key: {type: string}, value: {type: string}}, required: [key, value]}
    run: {state: set}
agents:
  extractor:
    description: Collects the rows.
    prompt: Call fetch_rows_%[1]d for the week in your task and answer with the rows.
    tools: [fetch_rows_%[1]d]
    flow: none
    max-steps: 6
    timeout: 2m
    retries: 1
  summarizer:
    description: Writes the brief.
    prompt: Summarize the rows into a brief of at most 200 words.
    context-supply: conversation
    turns: 4
    item-visibility: sub
    flow: {policy: deps, tools: [fetch_rows_%[1]d], max-tokens: 4000}
    tools: [template_%[1]d, keep_%[1]d]
    max-steps: 8
`, i)
}

// BenchmarkValidate measures `fsd validate` over a folder of 1,000
// generated manifests (discovery, reading, parsing, schema, checks). The
// schemas are compiled once, before the timer starts, as in a real run.
// Run with: GOMAXPROCS=1 go test -bench Validate -run '^$' ./spec
func BenchmarkValidate(b *testing.B) {
	const n = 1000
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%04d.skill.yaml", i)), []byte(manifest(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if d := ValidatePaths([]string{filepath.Join(dir, "s0000.skill.yaml")}, false); len(d) != 0 {
		b.Fatalf("generated manifest is invalid:\n%v", d)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if d := ValidatePaths([]string{dir}, false); len(d) != 0 {
			b.Fatalf("%d diagnostics, first %v", len(d), d[0])
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "manifests/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n*b.N)/cpu.Seconds(), "manifests/cpu-s")
	}
}

// BenchmarkLoadSkillMD measures loading the 70 KB example SKILL.md.
func BenchmarkLoadSkillMD(b *testing.B) {
	path := filepath.Join("..", "examples", "skills", "pdf-forms", "SKILL.md")
	for b.Loop() {
		if s, d := LoadSkill(path); s == nil || len(d.Errors(false)) != 0 {
			b.Fatal(d)
		}
	}
}

// BenchmarkFitCatalog: 200 skills with 600-character descriptions fitted
// to the default budget (over it, so the bisection runs). fsd computes it
// once per (re)load of the manifests, never per request.
func BenchmarkFitCatalog(b *testing.B) {
	skills := make([]*Skill, 200)
	for i := range skills {
		id := fmt.Sprintf("skill-%03d", i)
		skills[i] = &Skill{ID: id, Name: id, Description: strings.Repeat(fmt.Sprintf("Does part %d of the job well. ", i), 20)}
	}
	for b.Loop() {
		c := FitCatalog(skills, DefaultMaxCatalogTokens)
		if len(c.Cut) == 0 {
			b.Fatal("nothing cut")
		}
	}
}
