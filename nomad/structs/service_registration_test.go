package structs

import (
	"crypto/md5"
	"encoding/hex"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServiceRegistrationID(t *testing.T) {
	require.Equal(t, "_nomad-task-a1-server-web-http", ServiceRegistrationID("a1", "g", "server", "web", "http"))
	require.Equal(t, "_nomad-task-a1-group-g-web-", ServiceRegistrationID("a1", "g", "", "web", ""))
}

// TestChooseServices: the n registrations of smallest MD5(alloc ID + key),
// for every n a prefix of the same order; a registration leaving moves
// only its own place; malformed parameters are refused.
func TestChooseServices(t *testing.T) {
	var regs []*ServiceRegistration
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		regs = append(regs, &ServiceRegistration{ID: id, AllocID: "alloc-" + id})
	}
	order := func(key string) []string {
		ids := []string{}
		for _, r := range regs {
			ids = append(ids, r.ID)
		}
		sort.Slice(ids, func(i, j int) bool {
			hi := md5.Sum([]byte("alloc-" + ids[i] + key))
			hj := md5.Sum([]byte("alloc-" + ids[j] + key))
			return hex.EncodeToString(hi[:]) < hex.EncodeToString(hj[:])
		})
		return ids
	}
	idsOf := func(rs []*ServiceRegistration) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	cases := []struct {
		choose string
		want   []string
		err    bool
	}{
		{choose: "", want: []string{"a", "b", "c", "d", "e", "f"}},
		{choose: "2|k1", want: order("k1")[:2]},
		{choose: "3|k2", want: order("k2")[:3]},
		{choose: "0|k1", want: []string{}},
		{choose: "10|k1", want: order("k1")},
		{choose: "2|a|b", want: order("a|b")[:2]},
		{choose: "2", err: true},
		{choose: "2|", err: true},
		{choose: "two|k", err: true},
		{choose: "-1|k", err: true},
	}
	for _, c := range cases {
		got, err := ChooseServices(regs, c.choose)
		if c.err {
			require.ErrorIs(t, err, ErrMalformedChoose, c.choose)
			continue
		}
		require.NoError(t, err, c.choose)
		require.Equal(t, c.want, idsOf(got), c.choose)
	}

	// Without one of the chosen, the others keep their rank.
	full := order("k1")
	var rest []*ServiceRegistration
	for _, r := range regs {
		if r.ID != full[0] {
			rest = append(rest, r)
		}
	}
	got, err := ChooseServices(rest, "2|k1")
	require.NoError(t, err)
	require.Equal(t, full[1:3], idsOf(got))
}
