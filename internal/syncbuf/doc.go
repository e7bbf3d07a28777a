// Package syncbuf holds Buffer, a bytes.Buffer that one goroutine may read
// while others write to it: tests hand it to a logger, a process's stderr
// or a timed sink and poll what it holds. It is imported only by tests.
package syncbuf
