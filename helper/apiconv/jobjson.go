package apiconv

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/drover-project/drover/nomad/structs"
)

// jobJSON holds the JSON of JobToAPI(j) for each job object JobJSON was
// asked about, for as long as that object lives: an entry goes when the
// garbage collector frees its job.
var jobJSON = struct {
	sync.Mutex
	m map[weak.Pointer[structs.Job]]json.RawMessage
}{m: map[weak.Pointer[structs.Job]]json.RawMessage{}}

// JobJSON returns the JSON encoding of JobToAPI(j) ("null" for nil),
// encoding each job object once. The answer is shared: do not modify it.
//
// j must not change after the first call: pass only objects that are never
// modified, as the state store's are (a changed job is a new object). A
// fleet's nodes each fetch their allocations with the job; without the
// cache every answer converted and encoded the same job version again.
func JobJSON(j *structs.Job) (json.RawMessage, error) {
	if j == nil {
		return json.RawMessage("null"), nil
	}
	key := weak.Make(j)
	jobJSON.Lock()
	raw, ok := jobJSON.m[key]
	jobJSON.Unlock()
	if ok {
		return raw, nil
	}
	raw, err := json.Marshal(JobToAPI(j))
	if err != nil {
		return nil, err
	}
	jobJSON.Lock()
	defer jobJSON.Unlock()
	if cached, ok := jobJSON.m[key]; ok {
		return cached, nil // another caller encoded it meanwhile
	}
	jobJSON.m[key] = raw
	runtime.AddCleanup(j, forgetJobJSON, key)
	return raw, nil
}

func forgetJobJSON(key weak.Pointer[structs.Job]) {
	jobJSON.Lock()
	delete(jobJSON.m, key)
	jobJSON.Unlock()
}

// jobJSONEntries is how many jobs' JSON is cached (for tests).
func jobJSONEntries() int {
	jobJSON.Lock()
	defer jobJSON.Unlock()
	return len(jobJSON.m)
}
