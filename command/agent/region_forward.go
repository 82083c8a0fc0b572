package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Requests for another region. A request names its region with ?region=;
// a submitted job (register, plan) is for the region the query names, else
// the request body's Region, else the job's own Region. A request for
// another region is forwarded to a server of that region before anything
// else happens here (the other region authorizes it and, for a default
// read or a write, forwards it to its leader).

// globalRegion is the region name that, on a submitted job, means "the
// region of the server that receives it" (the api client's default).
const globalRegion = "global"

// localPrefixes are the paths about this agent itself: never forwarded to
// another region.
var localPrefixes = []string{"/v1/agent/", "/v1/regions", "/v1/metrics", "/v1/internal/", "/.well-known/", "/ui/"}

// regionScoped reports whether a request to path may be forwarded to
// another region.
func regionScoped(path string) bool {
	if !strings.HasPrefix(path, "/v1/") {
		return false
	}
	for _, p := range localPrefixes {
		if strings.HasPrefix(path, p) {
			return false
		}
	}
	return true
}

// forwardRegion forwards r to the region it is for when that is not this
// server's region, and reports whether it did (the response is written).
func (h *HTTPServer) forwardRegion(w http.ResponseWriter, r *http.Request) bool {
	if h.srv == nil || !regionScoped(r.URL.Path) {
		return false
	}
	region := r.URL.Query().Get("region")
	if isJobSubmission(r) {
		var err error
		if region, err = h.peekSubmitRegion(r); err != nil {
			return false // the endpoint answers the unreadable body
		}
	}
	return h.srv.ForwardRegion(w, r, region)
}

// isJobSubmission reports whether r registers or plans a job (the job's
// region counts).
func isJobSubmission(r *http.Request) bool {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return false
	}
	path := r.URL.EscapedPath()
	if path == "/v1/jobs" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/v1/job/")
	if !ok || rest == "" {
		return false
	}
	id, sub, nested := strings.Cut(rest, "/")
	return id != "" && (!nested || sub == "plan")
}

// peekSubmitRegion reads the body of a job submission (leaving it in place
// for the endpoint) and returns the region it is for.
func (h *HTTPServer) peekSubmitRegion(r *http.Request) (string, error) {
	buf, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.ContentLength = int64(len(buf))
	var body struct {
		Region string
		Job    *api.Job
	}
	if err := json.Unmarshal(buf, &body); err != nil {
		return "", err
	}
	return h.submitRegion(r, body.Region, body.Job), nil
}

// submitRegion is the region a job submitted with r goes to and is stored
// with (see submitRegion).
func (h *HTTPServer) submitRegion(r *http.Request, bodyRegion string, job *api.Job) string {
	var jobRegion string
	if job != nil && job.Region != nil {
		jobRegion = *job.Region
	}
	return submitRegion(r.URL.Query().Get("region"), bodyRegion, jobRegion, h.srv.Region())
}

// submitRegion: the region query parameter, else the request body's
// Region, else the job's Region; "" and "global" mean the agent's region.
func submitRegion(query, body, job, agent string) string {
	region := query
	if region == "" {
		region = body
	}
	if region == "" {
		region = job
	}
	if region == "" || region == globalRegion {
		return agent
	}
	return region
}
