package nomad

import (
	"fmt"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// checkGateConfig refuses (HTTP 400) a job whose groups ask for a gate
// this server cannot run: drover.analysis_query without server {
// prometheus_address }, drover.gate_webhook without server {
// gate_webhook_secret }. Registration runs on the leader, whose watcher
// runs the gates; a later leader configured otherwise leaves the gate
// inconclusive, which pauses the deployment saying so.
func (s *Server) checkGateConfig(job *structs.Job) error {
	var problems []string
	for _, tg := range job.TaskGroups {
		if _, ok := tg.Meta[structs.DroverMetaAnalysisQuery]; ok && s.config.Gates.PrometheusAddress == "" {
			problems = append(problems, fmt.Sprintf("group %q: meta %q: this server has no server { prometheus_address } configured to query",
				tg.Name, structs.DroverMetaAnalysisQuery))
		}
		if _, ok := tg.Meta[structs.DroverMetaGateWebhook]; ok && s.config.Gates.WebhookSecret == "" {
			problems = append(problems, fmt.Sprintf("group %q: meta %q: this server has no server { gate_webhook_secret } configured to sign calls with",
				tg.Name, structs.DroverMetaGateWebhook))
		}
	}
	if len(problems) > 0 {
		return structs.BadRequestf("%s", strings.Join(problems, "; "))
	}
	return nil
}
