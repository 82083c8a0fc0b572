package agent

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// Paging through every namespace's variables, one at a time, returns each
// once and in order, also when one namespace's name is a prefix of
// another's followed by "-" (sorted by namespace, "prod" comes before
// "prod-eu", but the string "prod-eu.a" sorts before "prod.b").
func TestPageVariables_WalksNamespacesInListOrder(t *testing.T) {
	list := []*api.VariableMetadata{
		{Namespace: "prod", Path: "b"},
		{Namespace: "prod", Path: "c/d"},
		{Namespace: "prod-eu", Path: "a"},
		{Namespace: "prod-eu", Path: "a-b"},
		{Namespace: "prod-eu", Path: "a/b"},
		{Namespace: "staging", Path: "a"},
	}
	var got []*api.VariableMetadata
	token := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, len(list), "paging does not end")
		q := url.Values{"per_page": {"1"}}
		if token != "" {
			q.Set("next_token", token)
		}
		r := httptest.NewRequest("GET", "/v1/vars?"+q.Encode(), nil)
		page, next, err := pageVariables(r, list)
		require.NoError(t, err)
		got = append(got, page...)
		if next == "" {
			break
		}
		token = next
	}
	require.Equal(t, list, got)
}
