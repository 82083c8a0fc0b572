package state

import (
	"reflect"

	"github.com/drover-project/drover/nomad/structs"
)

// specChanged reports whether b's specification differs from a's: any field
// but the server-set ones (status, stability, version, submit time, indexes).
// Stop counts as specification, so stopping or starting a job makes a new
// version, as in Nomad.
//
// COMPAT: replace with (*structs.Job).SpecChanged once nomad/structs
// canonical.go provides it, so that the store and the HTTP layer agree.
func specChanged(a, b *structs.Job) bool {
	return !reflect.DeepEqual(specOnly(a), specOnly(b))
}

// specOnly returns a shallow copy of j with the server-set fields zeroed.
func specOnly(j *structs.Job) structs.Job {
	c := *j
	c.Status, c.StatusDescription = "", ""
	c.Stable = false
	c.Version = 0
	c.SubmitTime = 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	return c
}
