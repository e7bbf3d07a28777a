// Package lazyre holds fsd's package-level regular expressions compiled
// on first use instead of at program start: every fsd command runs every
// package's initialisation, and a pattern that only validation, a tool
// error or an MCP config needs should cost nothing to fsd version or a
// run that never reaches it.
//
// It is not a cache of patterns built at run time: each call of New is
// meant for one package-level variable.
package lazyre
