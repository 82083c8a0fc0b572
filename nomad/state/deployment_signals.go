package state

import "github.com/drover-project/drover/nomad/structs"

// recordSignalsAtResume sets SignalsAtResume of every group of d (a private
// copy of a paused deployment being resumed) to the group's rollout signal
// counts over d's allocations now, in the resuming transaction: the
// deployment watcher pauses a resumed deployment again only on counts that
// rise past them (docs/semantics.md, "Auto-pause and auto-fail on runtime
// signals").
func (tx *writeTxn) recordSignalsAtResume(d *structs.Deployment) error {
	allocs, err := allocsOfDeployment(tx.Txn, nil, d.ID, d)
	if err != nil {
		return err
	}
	counts := structs.GroupRolloutSignals(d, allocs)
	for name, st := range d.TaskGroups {
		if st == nil {
			continue
		}
		at := map[string]int{}
		for sig, n := range counts[name] {
			at[sig] = n
		}
		st.SignalsAtResume = at
	}
	return nil
}
