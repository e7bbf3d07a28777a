package gfm

import (
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// NewParser returns the parser goldmark.New(goldmark.WithExtensions(
// extension.Table, extension.Strikethrough, extension.TaskList)).Parser()
// returns (I6): the same parsers and transformers at the same
// priorities, added in the same order.
func NewParser() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
		parser.WithParagraphTransformers(util.Prioritized(tableParagraphTransformer{}, 200)),
		parser.WithASTTransformers(util.Prioritized(tableASTTransformer{}, 0)),
		parser.WithInlineParsers(util.Prioritized(strikethroughParser{}, 500)),
		parser.WithInlineParsers(util.Prioritized(taskCheckBoxParser{}, 0)),
	)
}

// Strikethrough: goldmark's extension/strikethrough.go, its parser.

type strikethroughDelimiterProcessor struct{}

func (strikethroughDelimiterProcessor) IsDelimiter(b byte) bool { return b == '~' }

func (strikethroughDelimiterProcessor) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (strikethroughDelimiterProcessor) OnMatch(consumes int) gast.Node {
	return ast.NewStrikethrough()
}

type strikethroughParser struct{}

func (strikethroughParser) Trigger() []byte { return []byte{'~'} }

func (strikethroughParser) Parse(parent gast.Node, block text.Reader, pc parser.Context) gast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	node := parser.ScanDelimiter(line, before, 1, strikethroughDelimiterProcessor{})
	if node == nil || node.OriginalLength > 2 || before == '~' {
		return nil
	}
	node.Segment = segment.WithStop(segment.Start + node.OriginalLength)
	block.Advance(node.OriginalLength)
	pc.PushDelimiter(node)
	return node
}

func (strikethroughParser) CloseBlock(parent gast.Node, pc parser.Context) {}

// Task list items: goldmark's extension/tasklist.go, its parser, with
// its pattern ^\[([\sxX])\]\s* matched by hand (\s is RE2's [\t\n\f\r ]).

type taskCheckBoxParser struct{}

func (taskCheckBoxParser) Trigger() []byte { return []byte{'['} }

func (taskCheckBoxParser) Parse(parent gast.Node, block text.Reader, pc parser.Context) gast.Node {
	// The tree must be List > ListItem (parent.Parent()) > TextBlock
	// (parent), with the current line the text block's first.
	if parent.Parent() == nil || parent.Parent().FirstChild() != parent {
		return nil
	}
	if parent.HasChildren() {
		return nil
	}
	if _, ok := parent.Parent().(*gast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' {
		return nil
	}
	value := line[1]
	if !isRESpace(value) && value != 'x' && value != 'X' {
		return nil
	}
	n := 3
	for n < len(line) && isRESpace(line[n]) {
		n++
	}
	block.Advance(n)
	return ast.NewTaskCheckBox(value == 'x' || value == 'X')
}

func (taskCheckBoxParser) CloseBlock(parent gast.Node, pc parser.Context) {}

// isRESpace is RE2's \s: tab, newline, form feed, carriage return, space
// (not the vertical tab).
func isRESpace(b byte) bool {
	return b == '\t' || b == '\n' || b == '\f' || b == '\r' || b == ' '
}
