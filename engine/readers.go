package engine

import (
	"sync"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// readerSurface is the reader tools on one surface (the workflow's
// readers:) and how the engine's own texts name them: the context block's
// line for handle skills, and a kept result's preview.
type readerSurface struct {
	defs func() []model.ToolDef
	// howTo follows the loaded skills when a handle skill is among them.
	howTo string
	// paging says how to read a kept result on.
	paging string
}

var (
	compactReaders = readerSurface{
		defs:   sync.OnceValue(artifact.Tools),
		howTo:  "Handle skills' instructions are not shown: read them with artifact_md and artifact_read, passing the skill's handle (and path: a resource file relative to the skill folder). Start with artifact_md get=headings.",
		paging: "Page through the rest with artifact_read (get cat with offset, grep, head or tail) and this handle.",
	}
	namedReaders = readerSurface{
		defs:   sync.OnceValue(artifact.NamedTools),
		howTo:  "Handle skills' instructions are not shown: read them with the artifact_ reader tools, passing the skill's handle (and path: a resource file relative to the skill folder). Start with artifact_md_headings.",
		paging: "Page through the rest with artifact_cat (offset), artifact_grep, artifact_head or artifact_tail and this handle.",
	}
)

// readersOf is the surface a workflow's readers: names (compact when
// unset).
func readersOf(r spec.Readers) readerSurface {
	if r == spec.ReadersNamed {
		return namedReaders
	}
	return compactReaders
}

// shedOf is the transcript's policy for a workflow's window-shed: (half
// when unset).
func shedOf(s spec.WindowShed) transcript.Shed {
	if s == spec.ShedOldest {
		return transcript.ShedOldest
	}
	return transcript.ShedHalf
}
