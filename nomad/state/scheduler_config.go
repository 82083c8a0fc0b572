package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableSchedulerConfig holds the operator's singleton configurations: the
// *structs.SchedulerConfiguration and the *structs.AutopilotConfiguration,
// one row each.
const TableSchedulerConfig = "scheduler_config"

// schedulerConfigID is the key of the only row.
const schedulerConfigID = "scheduler_config"

// schedulerConfigRow is the stored row.
type schedulerConfigRow struct {
	ID     string
	Config *structs.SchedulerConfiguration
}

func schedulerConfigTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableSchedulerConfig,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}
}

// SchedulerConfig returns the stored scheduler configuration, or nil when
// none was ever set (callers use structs.DefaultSchedulerConfiguration).
func (r reader) SchedulerConfig(ws memdb.WatchSet) (*structs.SchedulerConfiguration, error) {
	raw, err := first(r.txn(), ws, TableSchedulerConfig, indexID, schedulerConfigID)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*schedulerConfigRow).Config, nil
}

// SetSchedulerConfig stores cfg at index and reports true; with cas, only
// when the stored configuration's ModifyIndex (0 when none is stored)
// equals cfg.ModifyIndex, else it writes nothing and reports false.
func (s *StateStore) SetSchedulerConfig(index uint64, cfg *structs.SchedulerConfiguration, cas bool) (bool, error) {
	updated := false
	err := s.write(index, func(tx *writeTxn) error {
		raw, err := tx.First(TableSchedulerConfig, indexID, schedulerConfigID)
		if err != nil {
			return err
		}
		c := *cfg
		c.CreateIndex = index
		var cur uint64
		if raw != nil {
			old := raw.(*schedulerConfigRow).Config
			cur, c.CreateIndex = old.ModifyIndex, old.CreateIndex
		}
		if cas && cur != cfg.ModifyIndex {
			return nil
		}
		c.ModifyIndex = index
		updated = true
		return tx.insert(TableSchedulerConfig, &schedulerConfigRow{ID: schedulerConfigID, Config: &c})
	})
	return updated, err
}

// SchedulerConfigRestore restores the scheduler configuration.
func (r *Restore) SchedulerConfigRestore(c *structs.SchedulerConfiguration) error {
	return r.insert(TableSchedulerConfig, &schedulerConfigRow{ID: schedulerConfigID, Config: c})
}

// autopilotConfigID is the key of the autopilot configuration's row in
// the same table.
const autopilotConfigID = "autopilot_config"

// autopilotConfigRow is the stored autopilot row.
type autopilotConfigRow struct {
	ID     string
	Config *structs.AutopilotConfiguration
}

// AutopilotConfig returns the stored autopilot configuration, or nil.
func (r reader) AutopilotConfig(ws memdb.WatchSet) (*structs.AutopilotConfiguration, error) {
	raw, err := first(r.txn(), ws, TableSchedulerConfig, indexID, autopilotConfigID)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*autopilotConfigRow).Config, nil
}

// SetAutopilotConfig stores cfg at index (with cas, only over the stored
// ModifyIndex, 0 when none) and reports whether it did.
func (s *StateStore) SetAutopilotConfig(index uint64, cfg *structs.AutopilotConfiguration, cas bool) (bool, error) {
	updated := false
	err := s.write(index, func(tx *writeTxn) error {
		raw, err := tx.First(TableSchedulerConfig, indexID, autopilotConfigID)
		if err != nil {
			return err
		}
		c := *cfg
		c.CreateIndex = index
		var cur uint64
		if raw != nil {
			old := raw.(*autopilotConfigRow).Config
			cur, c.CreateIndex = old.ModifyIndex, old.CreateIndex
		}
		if cas && cur != cfg.ModifyIndex {
			return nil
		}
		c.ModifyIndex = index
		updated = true
		return tx.insert(TableSchedulerConfig, &autopilotConfigRow{ID: autopilotConfigID, Config: &c})
	})
	return updated, err
}

// AutopilotConfigRestore restores the autopilot configuration.
func (r *Restore) AutopilotConfigRestore(c *structs.AutopilotConfiguration) error {
	return r.insert(TableSchedulerConfig, &autopilotConfigRow{ID: autopilotConfigID, Config: c})
}
