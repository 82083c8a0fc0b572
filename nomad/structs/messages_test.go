package structs

import (
	"bytes"
	"reflect"
	"testing"
)

// Encode's bytes are the type byte followed by what the stream encoder
// (EncodeValue, used by snapshots) writes, and they decode back to the
// message: raft logs written before and after stay readable.
func TestEncode_SameBytesAsStreamAndRoundTrips(t *testing.T) {
	job := &Job{ID: "web", Namespace: "default", Type: JobTypeSystem, Priority: 50,
		TaskGroups: []*TaskGroup{{Name: "web", Count: 1}}}
	req := &ApplyPlanResultsRequest{Job: job, EvalID: "e1", UpdatedAt: 7}
	for _, node := range []string{"n1", "n2", "n3"} {
		req.AllocsUpdated = append(req.AllocsUpdated, &Allocation{
			ID: "a-" + node, Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: node,
			DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending,
			AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
				"server": {Cpu: AllocatedCpuResources{CpuShares: 100}},
			}},
		})
	}
	got, err := Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	stream.WriteByte(uint8(ApplyPlanResultsRequestType))
	if err := EncodeValue(&stream, req); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stream.Bytes()) {
		t.Fatalf("Encode wrote %d bytes, the stream encoder %d; they differ", len(got), stream.Len())
	}
	var back ApplyPlanResultsRequest
	if err := Decode(got[1:], &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, req) {
		t.Fatalf("round trip changed the request:\n got %+v\nwant %+v", back, *req)
	}
}
