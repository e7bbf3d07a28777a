package gfm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// corpus has each extension's forms and the edges of their patterns.
var corpus = []string{
	"",
	"# Title\n\nSome *text* and **more**.\n",
	"| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 |\n",
	"a | b\n:-- | --:\nx | y | z\n",
	"para\nmore\n| h |\n| - |\n| c |\n",
	"| a |\n| -- |\n",
	"|a|b|\n|:-|-:|\n|`x\\|y`|z\\|w|\n",
	"| a |\n|:-:|\n|`p\\|q\\|r`|\n",
	"| a | b |\n| --- |\n| 1 | 2 |\n",
	"| a |\n| :: |\n",
	"| a |\n| -\v- |\n",
	"| a |\n| --- \v|\n",
	"| a |\n|\t-\t|\n",
	"| a |\n| ---: \f|\n",
	"    | a |\n    | - |\n",
	"| a |\n| ------ | extra\n",
	"~~gone~~ and ~one~ and ~~~three~~~ x~~y~~\n",
	"- [ ] open\n- [x] done\n- [X] Done\n- [\t] tab\n- [y] not\n- []empty\n  - [x]   nested\n",
	"* [x]\n",
	"- [\v] vt\n- [\f] ff\n- [x]\f\v after\n- [\r] cr\n",
	"1. [ ] numbered\n\n[link](http://example.com) [ref]\n\n[ref]: /url\n",
	"> quote with | pipe\n> |---|\n",
	"```go\n| a |\n|---|\n```\n",
	"text ~~strike **bold ~~ end**\n- [x] ~~done~~ | cell\n",
}

// TestSameTreeAsGoldmark: the parser makes the tree goldmark makes with
// its Table, Strikethrough and TaskList extensions.
func TestSameTreeAsGoldmark(t *testing.T) {
	for _, src := range corpus {
		if got, want := dump(NewParser().Parse(text.NewReader([]byte(src))), src), goldmarkTree(src); got != want {
			t.Errorf("%q:\ngot\n%s\ngoldmark\n%s", src, got, want)
		}
	}
}

func FuzzSameTreeAsGoldmark(f *testing.F) {
	for _, src := range corpus {
		f.Add(src)
	}
	p := NewParser()
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := dump(p.Parse(text.NewReader([]byte(src))), src), goldmarkTree(src); got != want {
			t.Errorf("%q:\ngot\n%s\ngoldmark\n%s", src, got, want)
		}
	})
}

var goldmarkParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()

func goldmarkTree(src string) string {
	return dump(goldmarkParser.Parse(text.NewReader([]byte(src))), src)
}

// dump writes a tree with what each node holds from the source.
func dump(doc gast.Node, src string) string {
	var b strings.Builder
	_ = gast.Walk(doc, func(n gast.Node, entering bool) (gast.WalkStatus, error) {
		if !entering {
			b.WriteString(")\n")
			return gast.WalkContinue, nil
		}
		fmt.Fprintf(&b, "(%s %T pos=%d", n.Kind(), n, n.Pos())
		if n.Type() == gast.TypeBlock {
			for i := 0; i < n.Lines().Len(); i++ {
				s := n.Lines().At(i)
				fmt.Fprintf(&b, " line=%d:%d+%d%q", s.Start, s.Stop, s.Padding, s.Value([]byte(src)))
			}
		}
		switch n := n.(type) {
		case *gast.Text:
			fmt.Fprintf(&b, " %d:%d%q soft=%v hard=%v raw=%v", n.Segment.Start, n.Segment.Stop, n.Segment.Value([]byte(src)), n.SoftLineBreak(), n.HardLineBreak(), n.IsRaw())
		case *ast.Table:
			fmt.Fprintf(&b, " %v", n.Alignments)
		case *ast.TableCell:
			fmt.Fprintf(&b, " %v", n.Alignment)
		case *ast.TaskCheckBox:
			fmt.Fprintf(&b, " checked=%v", n.IsChecked)
		case *gast.Emphasis:
			fmt.Fprintf(&b, " level=%d", n.Level)
		case *gast.Heading:
			fmt.Fprintf(&b, " level=%d", n.Level)
		case *gast.List:
			fmt.Fprintf(&b, " marker=%c tight=%v start=%d", n.Marker, n.IsTight, n.Start)
		case *gast.Link:
			fmt.Fprintf(&b, " %q %q", n.Destination, n.Title)
		}
		return gast.WalkContinue, nil
	})
	return b.String()
}
