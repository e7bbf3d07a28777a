// Package gcpace sets how often the garbage collector runs in an fsd
// process: not while the heap is a few megabytes (a short run would
// otherwise collect over and over), as Go's default once the live heap is
// large. GOGC or GOMEMLIMIT in the environment leave the runtime's own
// pacing in place.
package gcpace
