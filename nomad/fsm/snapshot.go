package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// snapshotFormat and snapshotVersion identify the snapshot encoding.
const (
	snapshotFormat  = "drover-fsm"
	snapshotVersion = 1
)

// snapshotHeader opens every snapshot.
type snapshotHeader struct {
	Format  string
	Version int
	// LastIndex is the store's latest index when the snapshot was taken.
	LastIndex uint64
}

// recordType tags each object of a snapshot. Persisted: never renumber.
type recordType uint8

const (
	jobRecord recordType = iota + 1
	jobVersionRecord
	submissionRecord
	nodeRecord
	allocRecord
	evalRecord
	deploymentRecord
	indexRecord
	// rootKeyRecord: explicit value in the keyring's range (60-69).
	rootKeyRecord recordType = 60
	// Image watcher records (range 40-49).
	imageCheckRecord recordType = 40
	imageWatchRecord recordType = 41
	imageBadRecord   recordType = 42
	// ACL and namespace records (range 110-119).
	aclPolicyRecord    recordType = 110
	aclTokenRecord     recordType = 111
	aclRoleRecord      recordType = 112
	namespaceRecord    recordType = 113
	oneTimeTokenRecord recordType = 114
	// Periodic launch records (range 100-109).
	periodicLaunchRecord recordType = 100
	scalingEventsRecord  recordType = 101
	// schedulerConfigRecord: explicit value in the operator's range (90-99).
	schedulerConfigRecord recordType = 90
	nodePoolRecord        recordType = 92
	autopilotConfigRecord recordType = 94
	// variableRecord: the next number after the highest used.
	variableRecord recordType = 115
	// serviceRegistrationRecord: the native service catalog.
	serviceRegistrationRecord recordType = 120
	// hostVolumeRecord: dynamic host volumes.
	hostVolumeRecord recordType = 121
	// endRecord closes a snapshot, so that a truncated one is an error.
	endRecord recordType = 255
)

// errSnapshot wraps every snapshot decoding failure.
var errSnapshot = errors.New("fsm: bad snapshot")

// writeSnapshot writes snap to w: a header, one record per object of every
// table, and an end record.
func writeSnapshot(w io.Writer, snap *state.Snapshot) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := &recordWriter{w: bw}
	enc.value(snapshotHeader{Format: snapshotFormat, Version: snapshotVersion, LastIndex: snap.LatestIndex()})

	jobs, err := snap.Jobs(nil, "*")
	enc.fail(err)
	writeAll(enc, jobRecord, jobs)
	versions, err := snap.JobVersions(nil)
	enc.fail(err)
	writeAll(enc, jobVersionRecord, versions)
	subs, err := snap.Submissions(nil)
	enc.fail(err)
	writeAll(enc, submissionRecord, subs)
	nodes, err := snap.Nodes(nil)
	enc.fail(err)
	writeAll(enc, nodeRecord, nodes)
	allocs, err := snap.Allocs(nil)
	enc.fail(err)
	writeAll(enc, allocRecord, allocs)
	evals, err := snap.Evals(nil, "*")
	enc.fail(err)
	writeAll(enc, evalRecord, evals)
	deps, err := snap.Deployments(nil, "*")
	enc.fail(err)
	writeAll(enc, deploymentRecord, deps)
	keys, err := snap.RootKeys(nil)
	enc.fail(err)
	writeAll(enc, rootKeyRecord, keys)
	checks, err := snap.ImageChecks(nil)
	enc.fail(err)
	writeAll(enc, imageCheckRecord, checks)
	watches, err := snap.ImageWatches(nil)
	enc.fail(err)
	writeAll(enc, imageWatchRecord, watches)
	bad, err := snap.ImageBadDigests(nil)
	enc.fail(err)
	writeAll(enc, imageBadRecord, bad)
	writeACL(enc, snap)
	writeACLAuth(enc, snap)
	launches, err := snap.PeriodicLaunches(nil)
	enc.fail(err)
	writeAll(enc, periodicLaunchRecord, launches)
	scaling, err := snap.AllScalingEvents(nil)
	enc.fail(err)
	writeAll(enc, scalingEventsRecord, scaling)
	pools, err := snap.StoredNodePools()
	enc.fail(err)
	writeAll(enc, nodePoolRecord, pools)
	vars, err := snap.Variables(nil, "*", "")
	enc.fail(err)
	writeAll(enc, variableRecord, vars)
	regs, err := snap.ServiceRegistrations(nil, "*")
	enc.fail(err)
	writeAll(enc, serviceRegistrationRecord, regs)
	hostVols, err := snap.HostVolumes(nil, "*")
	enc.fail(err)
	writeAll(enc, hostVolumeRecord, hostVols)
	apCfg, err := snap.AutopilotConfig(nil)
	enc.fail(err)
	if apCfg != nil {
		writeAll(enc, autopilotConfigRecord, []*structs.AutopilotConfiguration{apCfg})
	}
	schedCfg, err := snap.SchedulerConfig(nil)
	enc.fail(err)
	if schedCfg != nil {
		writeAll(enc, schedulerConfigRecord, []*structs.SchedulerConfiguration{schedCfg})
	}
	indexes, err := snap.Indexes()
	enc.fail(err)
	writeAll(enc, indexRecord, indexes)
	enc.value(uint8(endRecord))

	if enc.err != nil {
		return fmt.Errorf("fsm: write snapshot: %w", enc.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("fsm: write snapshot: %w", err)
	}
	return nil
}

// recordWriter encodes values until the first error, which it keeps.
type recordWriter struct {
	w   io.Writer
	err error
}

// fail records err (or nil) as the writer's error unless it has one.
func (rw *recordWriter) fail(err error) {
	if rw.err == nil {
		rw.err = err
	}
}

// value encodes v.
func (rw *recordWriter) value(v any) {
	if rw.err == nil {
		rw.err = structs.EncodeValue(rw.w, v)
	}
}

// writeAll writes one record of type t per object.
func writeAll[T any](rw *recordWriter, t recordType, objs []T) {
	for _, o := range objs {
		rw.value(uint8(t))
		rw.value(o)
	}
}

// readSnapshot decodes a snapshot from r into restore.
func readSnapshot(r io.Reader, restore *state.Restore) error {
	dec := structs.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return fmt.Errorf("%w: header: %v", errSnapshot, err)
	}
	if hdr.Format != snapshotFormat || hdr.Version != snapshotVersion {
		return fmt.Errorf("%w: format %q version %d, want %q version %d",
			errSnapshot, hdr.Format, hdr.Version, snapshotFormat, snapshotVersion)
	}
	for n := 0; ; n++ {
		var t uint8
		if err := dec.Decode(&t); err != nil {
			return fmt.Errorf("%w: record %d: %v", errSnapshot, n, err)
		}
		if recordType(t) == endRecord {
			return nil
		}
		if err := readRecord(dec, recordType(t), restore); err != nil {
			return fmt.Errorf("%w: record %d (type %d): %w", errSnapshot, n, t, err)
		}
	}
}

// decoder is the part of the msgpack decoder readRecord needs.
type decoder interface{ Decode(v any) error }

// readRecord decodes one object of type t and restores it.
func readRecord(dec decoder, t recordType, r *state.Restore) error {
	switch t {
	case jobRecord:
		return restoreOne(dec, r.JobRestore)
	case jobVersionRecord:
		return restoreOne(dec, r.JobVersionRestore)
	case submissionRecord:
		return restoreOne(dec, r.SubmissionRestore)
	case nodeRecord:
		return restoreOne(dec, r.NodeRestore)
	case allocRecord:
		return restoreOne(dec, r.AllocRestore)
	case evalRecord:
		return restoreOne(dec, r.EvalRestore)
	case deploymentRecord:
		return restoreOne(dec, r.DeploymentRestore)
	case rootKeyRecord:
		return restoreOne(dec, r.RootKeyRestore)
	case autopilotConfigRecord:
		return restoreOne(dec, r.AutopilotConfigRestore)
	case nodePoolRecord:
		return restoreOne(dec, r.NodePoolRestore)
	case variableRecord:
		return restoreOne(dec, r.VariableRestore)
	case serviceRegistrationRecord:
		return restoreOne(dec, r.ServiceRegistrationRestore)
	case hostVolumeRecord:
		return restoreOne(dec, r.HostVolumeRestore)
	case schedulerConfigRecord:
		return restoreOne(dec, r.SchedulerConfigRestore)
	case indexRecord:
		return restoreOne(dec, func(e *state.IndexEntry) error { return r.IndexRestore(e.Key, e.Value) })
	case imageCheckRecord:
		return restoreOne(dec, r.ImageCheckRestore)
	case imageWatchRecord:
		return restoreOne(dec, r.ImageWatchRestore)
	case imageBadRecord:
		return restoreOne(dec, r.ImageBadDigestRestore)
	case aclPolicyRecord:
		return restoreOne(dec, r.ACLPolicyRestore)
	case aclTokenRecord:
		return restoreOne(dec, r.ACLTokenRestore)
	case aclRoleRecord:
		return restoreOne(dec, r.ACLRoleRestore)
	case namespaceRecord:
		return restoreOne(dec, r.NamespaceRestore)
	case oneTimeTokenRecord:
		return restoreOne(dec, r.OneTimeTokenRestore)
	case periodicLaunchRecord:
		return restoreOne(dec, r.PeriodicLaunchRestore)
	case scalingEventsRecord:
		return restoreOne(dec, r.ScalingEventsRestore)
	default:
		if ok, err := restoreACLAuth(t, dec, r); ok {
			return err
		}
		return fmt.Errorf("unknown record type")
	}
}

// restoreOne decodes a *T and passes it to fn.
func restoreOne[T any](dec decoder, fn func(*T) error) error {
	v := new(T)
	if err := dec.Decode(v); err != nil {
		return err
	}
	return fn(v)
}

// writeACL writes the ACL and namespace tables.
func writeACL(enc *recordWriter, snap *state.Snapshot) {
	policies, err := snap.ACLPolicies(nil)
	enc.fail(err)
	writeAll(enc, aclPolicyRecord, policies)
	tokens, err := snap.ACLTokens(nil)
	enc.fail(err)
	writeAll(enc, aclTokenRecord, tokens)
	roles, err := snap.ACLRoles(nil)
	enc.fail(err)
	writeAll(enc, aclRoleRecord, roles)
	nss, err := snap.Namespaces(nil, "")
	enc.fail(err)
	writeAll(enc, namespaceRecord, nss)
	otts, err := snap.OneTimeTokens(nil)
	enc.fail(err)
	writeAll(enc, oneTimeTokenRecord, otts)
}
