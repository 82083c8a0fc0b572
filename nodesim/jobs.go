package nodesim

import (
	"encoding/json"
	"sync"

	"github.com/hashicorp/nomad/api"
)

// jobDecoder decodes the jobs of allocations, once per distinct encoding:
// the nodes of a fleet receive the same job version thousands of times,
// and the simulator runs them all in one process beside the servers it
// measures, so decoding each copy made its own CPU a part of what it
// measured. The decoded jobs are shared: nodes only read them.
type jobDecoder struct {
	mu   sync.Mutex
	byJS map[string]*api.Job // by the job's JSON
}

// jobDecoderSize bounds the jobs kept (a few versions of a few jobs are
// rolled out at once); past it the cache starts over.
const jobDecoderSize = 64

func (d *jobDecoder) decode(raw json.RawMessage) (*api.Job, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	d.mu.Lock()
	job, ok := d.byJS[string(raw)]
	d.mu.Unlock()
	if ok {
		return job, nil
	}
	job = new(api.Job)
	if err := json.Unmarshal(raw, job); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byJS == nil || len(d.byJS) >= jobDecoderSize {
		d.byJS = map[string]*api.Job{}
	}
	d.byJS[string(raw)] = job
	return job, nil
}
