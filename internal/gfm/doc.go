// Package gfm builds the markdown parser fsd reads artifacts with:
// goldmark's CommonMark parser with three GitHub Flavored Markdown
// extensions, tables, strikethrough and task list items, whose parsing
// code is goldmark's (v1.8.7, extension/table.go, strikethrough.go and
// tasklist.go, MIT licence, kept in LICENSE.goldmark), copied without the
// HTML renderers fsd never uses. Importing goldmark's extension package
// instead would initialise all its extensions in every fsd process:
// linkify's URL patterns alone are a millisecond of regexp compiling
// before any command reads a flag. The nodes are extension/ast's, so a
// reader walks them as goldmark's own, and TestSameTreeAsGoldmark holds
// the parser to goldmark's with those extensions.
//
// It parses; it does not render, and it adds no other extension.
package gfm
