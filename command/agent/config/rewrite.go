package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Nomad's agent configuration (HCL 1) lets `client { meta {...} }` and
// `client { options {...} }` (and `chroot_env`) use quoted keys such as
// "driver.raw_exec.enable", which HCL 2 rejects as argument names. To accept
// those files unchanged, rewriteClientMapBlocks turns each such block header
// `meta {` into the map attribute `meta = {`, whose object constructor does
// allow quoted keys. Only the two blocks directly inside a top-level `client`
// block are touched; nothing moves to another line.

// columnShift records, per line, the columns at which rewriteClientMapBlocks
// inserted text, so that diagnostics point at the user's source.
type columnShift map[int][]int

// insertLen is len(" =").
const insertLen = 2

// adjust maps a column of the rewritten source back to the original.
func (s columnShift) adjust(line, col int) int {
	out := col
	for i, at := range s[line] { // ascending original columns
		inserted := at + i*insertLen // where the insertion sits in the rewritten line
		switch {
		case col >= inserted+insertLen:
			out -= insertLen
		case col >= inserted:
			return at // inside the inserted text: point at the brace
		}
	}
	return out
}

func rewriteClientMapBlocks(src []byte, filename string) ([]byte, columnShift) {
	toks, diags := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return src, nil // the parser reports the problem
	}
	var (
		stack     []string // one entry per open brace: block type, or "" for other braces
		itemStart = true   // the next token starts a body item
		header    = false  // tokens since the item start could be a block header
		name      string   // first identifier of that header
		labelled  bool     // the header has labels
		inserts   []hcl.Pos
	)
	for _, tk := range toks {
		switch tk.Type {
		case hclsyntax.TokenNewline:
			itemStart, header, name, labelled = true, false, "", false
			continue
		case hclsyntax.TokenOBrace:
			if header && name != "" {
				if !labelled && (name == "meta" || name == "options" || name == "chroot_env") &&
					len(stack) == 1 && stack[0] == "client" {
					inserts = append(inserts, tk.Range.Start)
				}
				stack = append(stack, name)
			} else {
				stack = append(stack, "")
			}
			itemStart, header, name, labelled = true, false, "", false
			continue
		case hclsyntax.TokenCBrace:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenIdent:
			if itemStart {
				header, name = true, string(tk.Bytes)
			} else if header {
				labelled = true
			}
		case hclsyntax.TokenOQuote, hclsyntax.TokenQuotedLit, hclsyntax.TokenCQuote:
			if header {
				labelled = true
			}
		default:
			header = false
		}
		itemStart = false
	}
	if len(inserts) == 0 {
		return src, nil
	}
	out := make([]byte, 0, len(src)+insertLen*len(inserts))
	shift := columnShift{}
	last := 0
	for _, pos := range inserts {
		// Insert "= " before the brace: `meta {` becomes `meta = {`.
		out = append(out, src[last:pos.Byte]...)
		out = append(out, "= "...)
		last = pos.Byte
		shift[pos.Line] = append(shift[pos.Line], pos.Column)
	}
	out = append(out, src[last:]...)
	return out, shift
}
