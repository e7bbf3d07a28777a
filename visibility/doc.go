// Package visibility routes a generator's items — the messages its loop
// produces: assistant text, tool calls, tool results — by its
// item-visibility (D6): to the client event stream, tagged with run, task
// and agent, and/or into the parent's transcript.
//
// It decides where items go; it does not produce them, write the run
// record or return a worker's result to its parent (that result always
// returns, inside runBoard's answer, whatever the visibility).
package visibility
