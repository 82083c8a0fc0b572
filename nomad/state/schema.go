package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// Table names. They are also the keys of the index table.
const (
	TableJobs        = "jobs"
	TableJobVersions = "job_versions"
	TableSubmissions = "job_submissions"
	TableNodes       = "nodes"
	TableAllocs      = "allocs"
	TableEvals       = "evals"
	TableDeployments = "deployments"
	TableIndex       = "index"
)

// Index names shared by several tables.
const (
	indexID       = "id"
	indexIDPrefix = "id_prefix" // memdb's prefix form of the "id" index
	indexJob      = "job"
	indexNode     = "node"
	indexSecretID = "secret_id"
)

// schemaFuncs lists one function per table.
var schemaFuncs = []func() *memdb.TableSchema{
	jobsTableSchema,
	jobVersionsTableSchema,
	submissionsTableSchema,
	nodesTableSchema,
	allocsTableSchema,
	evalsTableSchema,
	deploymentsTableSchema,
	rootKeysTableSchema,
	aclPoliciesTableSchema,
	aclTokensTableSchema,
	aclRolesTableSchema,
	aclAuthMethodsTableSchema,
	aclBindingRulesTableSchema,
	oneTimeTokensTableSchema,
	namespacesTableSchema,
	schedulerConfigTableSchema,
	nodePoolsTableSchema,
	variablesTableSchema,
	serviceRegistrationsTableSchema,
	hostVolumesTableSchema,
	indexTableSchema,
}

// dbSchema returns the schema of the whole store.
func dbSchema() *memdb.DBSchema {
	s := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	for _, fn := range schemaFuncs {
		t := fn()
		if _, dup := s.Tables[t.Name]; dup {
			panic(fmt.Sprintf("state: duplicate table %q", t.Name))
		}
		s.Tables[t.Name] = t
	}
	return s
}

// nsField indexes an object's Namespace field.
func nsField() memdb.Indexer { return &memdb.StringFieldIndex{Field: "Namespace"} }

// nsIDIndex is the unique id index of a table keyed by Namespace and the
// string fields named, in order.
func nsIDIndex(fields ...string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: indexID, Unique: true, Indexer: nsCompound(fields...)}
}

// nsCompound indexes Namespace and the string fields named, in order.
func nsCompound(fields ...string) memdb.Indexer {
	idx := []memdb.Indexer{nsField()}
	for _, f := range fields {
		idx = append(idx, &memdb.StringFieldIndex{Field: f})
	}
	return &memdb.CompoundIndex{Indexes: idx}
}

// jobsTableSchema stores the current version of every job (*structs.Job).
func jobsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobs,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one job per (Namespace, ID); "id_prefix" serves ID
			// prefix lookups within a namespace.
			indexID: nsIDIndex("ID"),
		},
	}
}

// jobVersionsTableSchema stores the retained versions of every job
// (*structs.Job, the current one included).
func jobVersionsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobVersions,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one row per (Namespace, ID, Version); a prefix
			// lookup on (Namespace, ID) lists a job's versions.
			indexID: {
				Name:   indexID,
				Unique: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					nsField(),
					&memdb.StringFieldIndex{Field: "ID"},
					&memdb.UintFieldIndex{Field: "Version"},
				}},
			},
		},
	}
}

// submissionsTableSchema stores the source each job version was submitted
// from (*structs.JobSubmission).
func submissionsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableSubmissions,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one submission per (Namespace, JobID, Version); a
			// prefix lookup on (Namespace, JobID) lists a job's.
			indexID: {
				Name:   indexID,
				Unique: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					nsField(),
					&memdb.StringFieldIndex{Field: "JobID"},
					&memdb.UintFieldIndex{Field: "Version"},
				}},
			},
		},
	}
}

// nodesTableSchema stores client nodes (*structs.Node).
func nodesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNodes,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the node's UUID; "id_prefix" serves prefix lookups.
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "ID"},
			},
			// secret_id: authenticates client requests. Unique; a node
			// without a secret is simply not indexed.
			indexSecretID: {
				Name:         indexSecretID,
				Unique:       true,
				AllowMissing: true,
				Indexer:      &memdb.StringFieldIndex{Field: "SecretID"},
			},
		},
	}
}

// allocsTableSchema stores allocations (*structs.Allocation, with Job linked).
func allocsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableAllocs,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the allocation's UUID; "id_prefix" serves prefix lookups.
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: allocIDField,
			},
			// node: the allocations a client runs (its long poll).
			indexNode: {
				Name:         indexNode,
				AllowMissing: true,
				Indexer:      allocNodeField,
			},
			// job: all allocations of (Namespace, JobID), every
			// incarnation of the job.
			indexJob: {
				Name: indexJob,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					allocNamespaceField,
					allocJobField,
				}},
			},
		},
	}
}

// evalsTableSchema stores evaluations (*structs.Evaluation).
func evalsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableEvals,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the evaluation's UUID; "id_prefix" serves prefix lookups.
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "ID"},
			},
			// job: the evaluations of (Namespace, JobID); evals without a
			// job (none today) are not indexed.
			indexJob: {
				Name:         indexJob,
				AllowMissing: true,
				Indexer:      nsCompound("JobID"),
			},
		},
	}
}

// deploymentsTableSchema stores deployments (*structs.Deployment).
func deploymentsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableDeployments,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the deployment's UUID; "id_prefix" serves prefix lookups.
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "ID"},
			},
			// job: the deployments of (Namespace, JobID), every version.
			indexJob: {
				Name:    indexJob,
				Indexer: nsCompound("JobID"),
			},
		},
	}
}

// indexTableSchema stores, per table, the raft index of its last write
// (*IndexEntry).
func indexTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableIndex,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the table name.
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "Key"},
			},
		},
	}
}
