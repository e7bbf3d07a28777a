// Package transcript is a generator's append-only record of a run: user
// messages, assistant messages (text and tool calls), tool results and
// contextChanged entries (L5), written to the run record as JSON lines as
// they are appended, so a crash loses at most the step in flight (W1).
//
// A contextChanged entry may carry a line for the model: it
// joins the message sequence as a model.Context message, after the results
// of any calls still open when it was made, and is a group of one in the
// window.
//
// It also owns the transcript window (W1, W2, W4): the newest whole turns
// that fit a message cap, never starting anywhere but at a user message and
// never splitting an assistant message from the results of its calls. A
// Transcript's window sheds messages in batches down to a low-water mark
// (half the cap), so its first message stays put for many requests and
// they share a cacheable prefix. Turn
// and group boundaries are indexed as messages are appended, so a window
// costs time in proportion to its size, not to the transcript's.
//
// It does not assemble requests, render skills or stub reclaimed reader
// results (H4): the engine does that over the window this package returns.
// It does not summarize: the oldest messages simply leave the window.
package transcript
