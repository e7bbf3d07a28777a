// Package tmpl renders fsd's small templates — reply tools, command argv
// elements and scripted-model arguments — such as "Hello, {{.name}}!" or
// {{if eq .channel "online"}}…{{else}}…{{end}}.
//
// The syntax is Go's text/template (it uses text/template/parse, so syntax
// errors read the same and name their line), over JSON-shaped data only:
// maps, slices, strings, numbers, booleans and nil. The evaluator never
// calls methods. That is the point: text/template looks methods up by name
// with reflection, which makes the linker keep every exported method of
// every type in the binary (the provider SDKs alone made it 12 MB larger).
//
// Supported: fields and chains (.a.b, $x.a), variables ($x := …, $x = …),
// pipelines, parenthesised pipelines, if/else if/else, with, range (slices,
// maps in key order, integers) with break and continue, comments, trim
// markers, and the functions and, or, not, len, index, print, printf,
// println, eq, ne, lt, le, gt, ge and urlquery, plus those a caller adds
// (json, handle). define, template and block are refused at parse time.
// A missing map key is an error (text/template's missingkey=error).
package tmpl
