// Package event is the client event stream of a run: the Event value every
// part of fsd emits (run, request, text, tool, skill, task and board
// events) and the sinks that carry it to JSON lines, the run record or the
// terminal view, and its JSON form, written and read back without
// reflection (AppendJSON, Unmarshal).
//
// Events describe what happened; they never carry secrets or whole prompts.
package event
