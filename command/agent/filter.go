package agent

import (
	"net/http"

	"github.com/hashicorp/go-bexpr"
)

// listFilter is the `filter` query parameter of a list endpoint: a go-bexpr
// expression over the listed objects' fields as the API returns them
// (e.g. `Status == "running" and Meta.team == "web"`), as Nomad documents.
type listFilter struct {
	eval *bexpr.Evaluator
}

// parseFilter reads the filter parameter; a malformed expression is a 400.
func parseFilter(r *http.Request) (*listFilter, error) {
	expr := r.URL.Query().Get("filter")
	if expr == "" {
		return &listFilter{}, nil
	}
	eval, err := bexpr.CreateEvaluator(expr)
	if err != nil {
		return nil, badRequest("failed to read filter expression: %v", err)
	}
	return &listFilter{eval: eval}, nil
}

// apply keeps the items the expression selects. An expression naming a
// field the items do not have is a 400.
func applyFilter[T any](f *listFilter, items []T) ([]T, error) {
	if f == nil || f.eval == nil {
		return items, nil
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		ok, err := f.eval.Evaluate(it)
		if err != nil {
			return nil, badRequest("error evaluating filter expression: %v", err)
		}
		if ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// filterOf is f as the server's QueryOptions.Filter for a list whose
// objects are of type T: toAPI gives the API form the expression reads (nil
// when there is no expression).
func filterOf[T any](f *listFilter, toAPI func(T) any) func(any) (bool, error) {
	if f == nil || f.eval == nil {
		return nil
	}
	return func(obj any) (bool, error) {
		ok, err := f.eval.Evaluate(toAPI(obj.(T)))
		if err != nil {
			return false, badRequest("error evaluating filter expression: %v", err)
		}
		return ok, nil
	}
}
