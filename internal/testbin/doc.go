// Package testbin builds a program a test runs (fsd itself, for the tests
// that start it as a subprocess) where the last test run left it, so that
// go build links it again only when its sources or flags changed: a link
// of fsd is seconds of CPU, which a small machine would otherwise pay on
// every test run. It also puts the interpreter that PATH's python3
// launches first on PATH (PythonFirst), so tests that start python3 do
// not pay a version manager's launcher each time. It is imported only by
// tests; it does not run what it builds.
package testbin
