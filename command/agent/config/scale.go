package config

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// decodeScaleConfig decodes the server block's fleet-size settings:
// max_heartbeats_per_second and the *_gc_threshold durations.
func decodeScaleConfig(attrs hcl.Attributes, s *ServerConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{
		{"eval_gc_threshold", &s.EvalGCThreshold},
		{"job_gc_threshold", &s.JobGCThreshold},
		{"deployment_gc_threshold", &s.DeploymentGCThreshold},
		{"node_gc_threshold", &s.NodeGCThreshold},
	} {
		diags = append(diags, decodeDuration(attrs[f.name], f.dst)...)
	}
	if a := attrs["max_heartbeats_per_second"]; a != nil {
		d := decodeAttr(a, &s.MaxHeartbeatsPerSecond)
		if !d.HasErrors() && s.MaxHeartbeatsPerSecond <= 0 {
			d = append(d, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  `Invalid value for "max_heartbeats_per_second"`,
				Detail:   fmt.Sprintf("must be greater than 0, got %v", s.MaxHeartbeatsPerSecond),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		diags = append(diags, d...)
	}
	return diags
}

// mergeScaleConfig lets o's set fleet-size settings override out's.
func mergeScaleConfig(out, o *ServerConfig) {
	for _, p := range []struct{ dst, src *time.Duration }{
		{&out.EvalGCThreshold, &o.EvalGCThreshold},
		{&out.JobGCThreshold, &o.JobGCThreshold},
		{&out.DeploymentGCThreshold, &o.DeploymentGCThreshold},
		{&out.NodeGCThreshold, &o.NodeGCThreshold},
	} {
		if *p.src > 0 {
			*p.dst = *p.src
		}
	}
	if o.MaxHeartbeatsPerSecond > 0 {
		out.MaxHeartbeatsPerSecond = o.MaxHeartbeatsPerSecond
	}
}
