// Package testbin builds a program a test runs (fsd itself, for the tests
// that start it as a subprocess) where the last test run left it, so that
// go build links it again only when its sources or flags changed: a link
// of fsd is seconds of CPU, which a small machine would otherwise pay on
// every test run. It is imported only by tests; it does not run what it
// builds.
package testbin
