// Package scaffold writes the starting projects of `fsd init`: a skill, a
// workflow and a scripted-model script that validate and run offline at
// once, so a new user starts from files that work rather than copying
// them out of examples/.
//
// The templates are embedded (templates/NAME/…) and written as they are:
// no text substitution, so what the tests run is byte for byte what a
// user gets. Writing never overwrites a file. It is not a general
// templating engine nor a project generator for anything but fsd.
package scaffold
