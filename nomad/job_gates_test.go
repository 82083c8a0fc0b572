package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestCheckGateConfig: a gate the server cannot run is refused (400),
// naming the group, the key and the missing setting.
func TestCheckGateConfig(t *testing.T) {
	job := &structs.Job{ID: "web", TaskGroups: []*structs.TaskGroup{
		{Name: "web", Meta: map[string]string{structs.DroverMetaAnalysisQuery: "up", structs.DroverMetaAnalysisCondition: "== 1"}},
		{Name: "api", Meta: map[string]string{structs.DroverMetaGateWebhook: "http://gate.example/"}},
		{Name: "plain"},
	}}
	err := (&Server{}).checkGateConfig(job)
	require.Error(t, err)
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, `group "web": meta "drover.analysis_query": this server has no server { prometheus_address } configured to query`)
	require.ErrorContains(t, err, `group "api": meta "drover.gate_webhook": this server has no server { gate_webhook_secret } configured to sign calls with`)

	s := &Server{config: Config{Gates: GateConfig{PrometheusAddress: "http://prom:9090", WebhookSecret: "x"}}}
	require.NoError(t, s.checkGateConfig(job))
	require.NoError(t, (&Server{}).checkGateConfig(&structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "plain"}}}))
}
