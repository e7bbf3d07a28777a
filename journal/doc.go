// Package journal holds the rules that make a run record safe to resume,
// apart from any one record format: one writer per run folder (Lock), a
// torn last line repaired before anything is appended (RepairTail),
// digests of what a run was made from and the check that a resume is made
// from the same (Digests, Diff), and what a resumed run does with each
// journaled tool call (Plan).
//
// It is not the record itself: the engine decides what files a run keeps
// and what goes in them, and calls these functions on them.
package journal
