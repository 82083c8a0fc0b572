package scheduler

import (
	"testing"

	"github.com/google/uuid"
)

// IDs are version 4 UUIDs in canonical form, distinct across batches.
func TestNewIDSource_UUIDv4Unique(t *testing.T) {
	next := newIDSource()
	seen := map[string]bool{}
	for i := 0; i < 3*idBatch+7; i++ {
		id := next()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("id %d %q: %v", i, id, err)
		}
		if u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("id %q: version %d variant %v, canonical %q", id, u.Version(), u.Variant(), u.String())
		}
		if seen[id] {
			t.Fatalf("id %q repeated after %d ids", id, i)
		}
		seen[id] = true
	}
}
