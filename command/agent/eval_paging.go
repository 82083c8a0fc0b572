package agent

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// pageEvals orders evaluations and cuts the page the request asks for:
//
//   - order: oldest first (CreateIndex, then ID); by ID when a prefix is
//     given; reverse=true flips either order;
//   - next_token: where the page starts: "<CreateIndex>.<ID>" of its first
//     evaluation (just "<ID>" in ID order), as X-Nomad-NextToken gave it;
//     a token naming an evaluation since deleted starts at the next one;
//   - per_page: at most that many (0 or absent: all).
//
// It returns the page and the token of the next one ("" when none).
func pageEvals(r *http.Request, evals []*structs.Evaluation, byID bool) ([]*structs.Evaluation, string, error) {
	q := r.URL.Query()
	reverse, err := boolParam(r, "reverse", false)
	if err != nil {
		return nil, "", err
	}
	perPage := 0
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, "", badRequest("Invalid per_page %q: must be a non-negative integer", v)
		}
		perPage = n
	}
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
	if tok := q.Get("next_token"); tok != "" {
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
	if perPage == 0 || len(sorted) <= perPage {
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
		return evalKey{}, badRequest("Invalid next_token %q: must be <create index>.<evaluation ID> as X-Nomad-NextToken gave it", tok)
	}
	return evalKey{index: n, id: id}, nil
}
