package nomad

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// pageEvals orders evaluations and cuts the page opts asks for:
//
//   - order: oldest first (CreateIndex, then ID); by ID when a prefix is
//     given; opts.Reverse flips either order;
//   - opts.NextToken: where the page starts: "<CreateIndex>.<ID>" of its
//     first evaluation (just "<ID>" in ID order), as the previous page's
//     NextToken gave it; a token naming an evaluation since deleted starts
//     at the next one;
//   - opts.PerPage: at most that many (0: all).
//
// It returns the page and the token of the next one ("" when none).
func pageEvals(opts *QueryOptions, evals []*structs.Evaluation, byID bool) ([]*structs.Evaluation, string, error) {
	reverse, perPage := opts.Reverse, opts.PerPage
	key := func(e *structs.Evaluation) evalKey { return evalKey{index: e.CreateIndex, id: e.ID} }
	if byID {
		key = func(e *structs.Evaluation) evalKey { return evalKey{id: e.ID} }
	}
	order := func(a, b evalKey) int {
		c := cmp.Or(cmp.Compare(a.index, b.index), strings.Compare(a.id, b.id))
		if reverse {
			return -c
		}
		return c
	}
	sorted := slices.Clone(evals)
	slices.SortFunc(sorted, func(a, b *structs.Evaluation) int { return order(key(a), key(b)) })
	if tok := opts.NextToken; tok != "" {
		start, err := parseEvalToken(tok, byID)
		if err != nil {
			return nil, "", err
		}
		i := 0
		for i < len(sorted) && order(key(sorted[i]), start) < 0 {
			i++
		}
		sorted = sorted[i:]
	}
	if perPage <= 0 || len(sorted) <= perPage {
		return sorted, "", nil
	}
	return sorted[:perPage], key(sorted[perPage]).String(byID), nil
}

// evalKey is an evaluation's place in a list: CreateIndex (0 in ID order)
// and ID.
type evalKey struct {
	index uint64
	id    string
}

func (k evalKey) String(byID bool) string {
	if byID {
		return k.id
	}
	return strconv.FormatUint(k.index, 10) + "." + k.id
}

func parseEvalToken(tok string, byID bool) (evalKey, error) {
	if byID {
		return evalKey{id: tok}, nil
	}
	idx, id, ok := strings.Cut(tok, ".")
	n, err := strconv.ParseUint(idx, 10, 64)
	if !ok || err != nil {
		return evalKey{}, structs.BadRequestf("Invalid next_token %q: must be <create index>.<evaluation ID> as X-Nomad-NextToken gave it", tok)
	}
	return evalKey{index: n, id: id}, nil
}
