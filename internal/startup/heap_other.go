//go:build !linux

package startup

// hugeHeap does nothing outside Linux: MADV_HUGEPAGE is Linux's.
func hugeHeap() {}
