package structs

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// wirePlan is a plan like the scheduler's: a group's placements share one
// metric and one task-resources map, each has its own ports; one is a
// canary, one replaces a previous allocation, one is an in-place update
// carrying task states; stops include a lost allocation.
func wirePlan() *ApplyPlanResultsRequest {
	metric := &AllocationMetric{NodesEvaluated: 3}
	tasks := map[string]*AllocatedTaskResources{"server": {Cpu: AllocatedCpuResources{CpuShares: 100}, Memory: AllocatedMemoryResources{MemoryMB: 64}}}
	req := &ApplyPlanResultsRequest{EvalID: "e1", UpdatedAt: 7,
		Job:        &Job{ID: "web", Namespace: "default", Type: JobTypeSystem, TaskGroups: []*TaskGroup{{Name: "web", Count: 1}}},
		Deployment: &Deployment{ID: "d1", JobID: "web"},
		AllocsStopped: []*Allocation{
			{ID: "old-1", DesiredStatus: AllocDesiredStatusStop, DesiredDescription: "alloc is being updated due to job update"},
			{ID: "old-2", DesiredStatus: AllocDesiredStatusStop, ClientStatus: AllocClientStatusLost, ClientDescription: "lost", FollowupEvalID: "f1"},
		},
	}
	for i := 0; i < 5; i++ {
		a := &Allocation{ID: fmt.Sprintf("a-%d", i), Namespace: "default", EvalID: "e1", Name: "web.web[0]",
			NodeID: fmt.Sprintf("n%d", i), NodeName: fmt.Sprintf("node %d", i), JobID: "web", JobVersion: 2, TaskGroup: "web",
			Metrics: metric, DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending, DeploymentID: "d1",
			AllocatedResources: &AllocatedResources{Tasks: tasks, Shared: AllocatedSharedResources{DiskMB: 300,
				Networks: []*NetworkResource{{IP: "10.0.0.1", DynamicPorts: []Port{{Label: "http", Value: 20000 + i, To: 8080}}}},
				Ports:    []AllocatedPortMapping{{Label: "http", Value: 20000 + i, To: 8080, HostIP: "10.0.0.1"}}}},
		}
		req.AllocsUpdated = append(req.AllocsUpdated, a)
	}
	req.AllocsUpdated[1].DeploymentStatus = &AllocDeploymentStatus{Canary: true}
	req.AllocsUpdated[2].PreviousAllocation = "old-1"
	req.AllocsUpdated[3].SignedIdentities = map[string]string{"server/default": "jwt"}
	req.AllocsUpdated[4].AllocatedResources = &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{"other": {}}}
	inplace := &Allocation{ID: "kept", Namespace: "default", JobID: "web", JobVersion: 2, TaskGroup: "web", NodeID: "n9",
		TaskStates: map[string]*TaskState{"server": {State: "running"}}, ClientStatus: AllocClientStatusRunning, CreateIndex: 4}
	// A client-reported network status and an operator's transition make
	// an allocation go whole too.
	networked := &Allocation{ID: "networked", Namespace: "default", JobID: "web", JobVersion: 2, TaskGroup: "web", NodeID: "n8",
		NetworkStatus: &AllocNetworkStatus{Address: "10.0.0.8"}, DesiredTransition: DesiredTransition{Migrate: true}}
	req.AllocsUpdated = append(req.AllocsUpdated[:2], append([]*Allocation{inplace}, req.AllocsUpdated[2:]...)...)
	req.AllocsUpdated = append(req.AllocsUpdated, networked)
	return req
}

// The wire form decodes back to the request: allocations whole and in
// order, stops with the fields a stop applies. Placements that shared a
// metric or task resources share them after decoding too.
func TestPlanResultsWire_RoundTrip(t *testing.T) {
	req := wirePlan()
	data, err := Encode(ApplyPlanResultsCompactRequestType, CompactPlanResults(req))
	if err != nil {
		t.Fatal(err)
	}
	var w PlanResultsWire
	if err := Decode(data[1:], &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Bases) != 1 || len(w.Tasks) != 2 || len(w.Full) != 2 {
		t.Fatalf("wire form has %d bases, %d task maps, %d whole allocations; want 1, 2, 2", len(w.Bases), len(w.Tasks), len(w.Full))
	}
	got := w.Expand()
	// The full form, for comparison: what the FSM decoded before.
	data, err = Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	var want ApplyPlanResultsRequest
	if err := Decode(data[1:], &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.AllocsUpdated, want.AllocsUpdated) {
		for i := range want.AllocsUpdated {
			if i >= len(got.AllocsUpdated) || !reflect.DeepEqual(got.AllocsUpdated[i], want.AllocsUpdated[i]) {
				t.Fatalf("allocation %d:\n got %+v\nwant %+v", i, got.AllocsUpdated[i], want.AllocsUpdated[i])
			}
		}
		t.Fatalf("got %d allocations, want %d", len(got.AllocsUpdated), len(want.AllocsUpdated))
	}
	for i, s := range want.AllocsStopped {
		stop := &Allocation{ID: s.ID, DesiredStatus: s.DesiredStatus, DesiredDescription: s.DesiredDescription,
			ClientStatus: s.ClientStatus, ClientDescription: s.ClientDescription, FollowupEvalID: s.FollowupEvalID}
		if !reflect.DeepEqual(got.AllocsStopped[i], stop) {
			t.Fatalf("stop %d: got %+v, want %+v", i, got.AllocsStopped[i], stop)
		}
	}
	if got.EvalID != "e1" || got.UpdatedAt != 7 || got.Job.ID != "web" || got.Deployment.ID != "d1" {
		t.Fatalf("request fields lost: %+v", got)
	}
	if got.AllocsUpdated[0].Metrics != got.AllocsUpdated[1].Metrics ||
		reflect.ValueOf(got.AllocsUpdated[0].AllocatedResources.Tasks).UnsafePointer() != reflect.ValueOf(got.AllocsUpdated[3].AllocatedResources.Tasks).UnsafePointer() {
		t.Fatal("placements that shared a metric and task resources no longer share them")
	}
	if got.AllocsUpdated[0].AllocatedResources == got.AllocsUpdated[1].AllocatedResources {
		t.Fatal("placements share one AllocatedResources: their ports are their own")
	}
}

// Every field of Allocation is carried by the wire form: in the base, in
// PlanAlloc, or by sending the allocation whole. A field added to
// Allocation fails this test until the wire form carries it.
func TestPlanResultsWire_CoversAllocationFields(t *testing.T) {
	carried := map[string]bool{
		"Job":                true, // never encoded (codec:"-")
		"AllocatedResources": true, // HasResources, Tasks, OwnTasks, Shared
		"TaskStates":         true, // sent whole
		"RescheduleTracker":  true, // sent whole
		"NetworkStatus":      true, // sent whole
		"DesiredTransition":  true, // sent whole
		"DisconnectedAt":     true, // sent whole
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[allocBase](), reflect.TypeFor[PlanAlloc]()} {
		for i := range typ.NumField() {
			carried[typ.Field(i).Name] = true
		}
	}
	at := reflect.TypeFor[Allocation]()
	for i := range at.NumField() {
		if !carried[at.Field(i).Name] {
			t.Errorf("Allocation.%s is not carried by PlanResultsWire", at.Field(i).Name)
		}
	}
	// And the base copies each of its fields both ways.
	bt := reflect.TypeFor[allocBase]()
	var k allocBase
	kv := reflect.ValueOf(&k).Elem()
	for i := range bt.NumField() {
		f := kv.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + bt.Field(i).Name)
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("allocBase.%s: kind %v not handled by this test", bt.Field(i).Name, f.Kind())
		}
	}
	var a Allocation
	a.setBase(k)
	if baseOf(&a) != k {
		t.Fatalf("setBase then baseOf lost fields:\n got %+v\nwant %+v", baseOf(&a), k)
	}
	av := reflect.ValueOf(a)
	for i := range bt.NumField() {
		name := bt.Field(i).Name
		if !reflect.DeepEqual(av.FieldByName(name).Interface(), kv.Field(i).Interface()) {
			t.Errorf("setBase does not set Allocation.%s", name)
		}
	}
}

// TestPlanResultsWire_ArraysAndOldMaps: placements and stops go as arrays
// (no field names in the entry), and an entry written before, with each
// placement and stop a map keyed by field name, decodes to the same plan.
func TestPlanResultsWire_ArraysAndOldMaps(t *testing.T) {
	w := CompactPlanResults(wirePlan())
	data, err := Encode(ApplyPlanResultsCompactRequestType, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"HasResources", "OwnTasks"} { // PlanAlloc's own fields
		if bytes.Contains(data, []byte(name)) {
			t.Errorf("the entry names the field %s: placements must be arrays", name)
		}
	}
	stopsOnly, err := Encode(ApplyPlanResultsCompactRequestType, w.Stops)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stopsOnly, []byte("FollowupEvalID")) {
		t.Error("stops name their fields: they must be arrays")
	}
	var fromArrays PlanResultsWire
	if err := Decode(data[1:], &fromArrays); err != nil {
		t.Fatal(err)
	}

	old := exportedFields(w)
	var allocs, stops []any
	for _, a := range w.Allocs {
		allocs = append(allocs, exportedFields(a))
	}
	for _, s := range w.Stops {
		stops = append(stops, exportedFields(s))
	}
	old["Allocs"], old["Stops"] = allocs, stops
	data, err = Encode(ApplyPlanResultsCompactRequestType, old)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("OwnTasks")) {
		t.Fatal("the old form must name its fields")
	}
	var fromMaps PlanResultsWire
	if err := Decode(data[1:], &fromMaps); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromMaps.Expand(), fromArrays.Expand()) {
		t.Fatalf("the old form decodes to another plan:\n%+v\n%+v", fromMaps.Allocs, fromArrays.Allocs)
	}
}

// exportedFields returns v's (a struct's) exported fields by name.
func exportedFields(v any) map[string]any {
	rv := reflect.Indirect(reflect.ValueOf(v))
	out := map[string]any{}
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Type().Field(i); f.IsExported() {
			out[f.Name] = rv.Field(i).Interface()
		}
	}
	return out
}
