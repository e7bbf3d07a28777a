package view

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/model"
)

func TestFrameGolden(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(5 * time.Second)
	b := NewBoard(&bytes.Buffer{}, func() time.Time { return now })
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, e := range []event.Event{
		{Type: event.SkillLoaded, Skill: "market-research"},
		{Type: event.TaskAdded, Task: "north", Agent: "market-research/collector"},
		{Type: event.TaskAdded, Task: "south", Agent: "market-research/collector"},
		{Type: event.TaskAdded, Task: "join", Agent: "market-research/analyst"},
		{Type: event.TaskStarted, Task: "north", Agent: "market-research/collector", Time: at(1)},
		{Type: event.TaskStarted, Task: "south", Agent: "market-research/collector", Time: at(1)},
		{Type: event.Request, Task: "north", Usage: &model.Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 12}, Cost: 0.0002},
		{Type: event.Request, Task: "south", Usage: &model.Usage{InputTokens: 80, CacheWriteTokens: 70, OutputTokens: 8}, Cost: 0.0003},
		{Type: event.Request, Usage: &model.Usage{InputTokens: 1000, OutputTokens: 50}, Cost: 0.001}, // the host's
		{Type: event.TaskCompleted, Task: "north", Time: at(2.5), Usage: &model.Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 12}, Cost: 0.0002},
		{Type: event.TaskFailed, Task: "south", Time: at(3), Err: "boom"},
	} {
		b.Emit(e)
	}
	golden.CheckString(t, filepath.Join("testdata", "frame.golden"), b.Frame())
}

// A big board draws a bounded number of rows, running tasks first kept.
func TestFrameBounded(t *testing.T) {
	b := NewBoard(&bytes.Buffer{}, nil)
	for i := 0; i < 1000; i++ {
		b.Emit(event.Event{Type: event.TaskAdded, Task: fmt.Sprintf("t%d", i)})
	}
	b.Emit(event.Event{Type: event.TaskStarted, Task: "t3", Time: time.Now()})
	f := b.Frame()
	if n := strings.Count(f, "\n"); n > maxRows+3 {
		t.Errorf("%d lines for 1,000 tasks", n)
	}
	if !strings.Contains(f, "t3 ") || !strings.Contains(f, "more tasks") || !strings.Contains(f, "tasks 1000: 999 pending, 1 running") {
		t.Errorf("frame:\n%s", f)
	}
}

// Redraws move the cursor back over the previous frame.
func TestRedrawInPlace(t *testing.T) {
	var out bytes.Buffer
	b := NewBoard(&out, nil)
	b.Emit(event.Event{Type: event.TaskAdded, Task: "a"})
	b.draw(true)
	first := out.Len()
	b.Emit(event.Event{Type: event.TaskStarted, Task: "a", Time: time.Now()})
	b.draw(true)
	second := out.String()[first:]
	if !strings.HasPrefix(second, "\x1b[3A") || !strings.Contains(second, "\x1b[2K") {
		t.Errorf("second frame does not redraw in place: %q", second)
	}
	b.Start(time.Millisecond)
	b.Stop()
}

// The footer says how the run ended as its record does: a stopped run is
// interrupted, not failed.
func TestFooterSaysHowTheRunEnded(t *testing.T) {
	for _, tc := range []struct {
		fin  event.Event
		want string
	}{
		{event.Event{Type: event.RunFinished, Status: "interrupted", Err: "interrupted: signal"}, " · interrupted\n"},
		{event.Event{Type: event.RunFinished, Status: "failed", Err: "boom"}, " · failed\n"},
		{event.Event{Type: event.RunFinished, Err: "boom"}, " · failed\n"},
		{event.Event{Type: event.RunFinished, Status: "finished"}, " · finished\n"},
	} {
		b := NewBoard(&bytes.Buffer{}, time.Now)
		b.Emit(tc.fin)
		if got := b.Frame(); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%+v: footer %q, want it to end %q", tc.fin, got, tc.want)
		}
	}
}

// A call's progress shows under its running task, and the host's above
// the summary, until the call's result.
func TestFrameShowsCallProgress(t *testing.T) {
	b := NewBoard(&bytes.Buffer{}, nil)
	b.Emit(event.Event{Type: event.TaskStarted, Task: "fetch", Agent: "a", Time: time.Now()})
	b.Emit(event.Event{Type: event.ToolProgress, Task: "fetch", Tool: "mcp__k__s__crawl", Progress: &event.Progress{Done: 3, Total: 5}, Text: "page 3"})
	b.Emit(event.Event{Type: event.ToolProgress, Tool: "mcp__k__s__index", Progress: &event.Progress{Done: 7}})
	f := b.Frame()
	if !strings.Contains(f, "  ↳ mcp__k__s__crawl 3/5 (60%): page 3\n") || !strings.Contains(f, "host ↳ mcp__k__s__index 7\n") {
		t.Fatalf("frame:\n%s", f)
	}
	b.Emit(event.Event{Type: event.ToolResult, Task: "fetch", Tool: "mcp__k__s__crawl"})
	b.Emit(event.Event{Type: event.ToolResult, Tool: "mcp__k__s__index"})
	if f := b.Frame(); strings.Contains(f, "↳") {
		t.Fatalf("progress kept after the results:\n%s", f)
	}
}
