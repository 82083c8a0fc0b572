package agent

import "net/http"

// registerRoutes lists every endpoint. Writes accept PUT and POST, as Nomad
// does.
func (h *HTTPServer) registerRoutes() {
	m := h.mux
	put := func(path string, fn handlerFunc) {
		m.HandleFunc("PUT "+path, h.write(fn))
		m.HandleFunc("POST "+path, h.write(fn))
	}
	get := func(path string, fn handlerFunc) { m.HandleFunc("GET "+path, h.read(fn)) }
	getLocal := func(path string, fn handlerFunc) { m.HandleFunc("GET "+path, h.local(fn)) }

	get("/v1/jobs", h.jobsList)
	put("/v1/jobs", h.jobsRegister)
	m.HandleFunc("PUT /v1/jobs/parse", h.local(h.jobsParse)) // pure: any server answers
	m.HandleFunc("POST /v1/jobs/parse", h.local(h.jobsParse))
	put("/v1/validate/job", h.jobValidate)
	get("/v1/job/{id}", h.jobGet)
	put("/v1/job/{id}", h.jobsRegister)
	m.HandleFunc("DELETE /v1/job/{id}", h.write(h.jobDeregister))
	get("/v1/job/{id}/summary", h.jobSummary)
	get("/v1/job/{id}/allocations", h.jobAllocations)
	get("/v1/job/{id}/evaluations", h.jobEvaluations)
	get("/v1/job/{id}/deployment", h.jobLatestDeployment)
	get("/v1/job/{id}/deployments", h.jobDeployments)
	get("/v1/job/{id}/versions", h.jobVersions)
	get("/v1/job/{id}/submission", h.jobSubmission)
	put("/v1/job/{id}/plan", h.jobPlan)
	put("/v1/job/{id}/revert", h.jobRevert)
	put("/v1/job/{id}/stable", h.jobStable)
	put("/v1/job/{id}/evaluate", h.jobEvaluate)

	for _, method := range []string{"PUT", "POST"} { // reads with a body
		m.HandleFunc(method+" /v1/search", h.read(h.searchPrefix))
		m.HandleFunc(method+" /v1/search/fuzzy", h.read(h.searchFuzzy))
	}

	get("/v1/evaluations", h.evalsList)
	get("/v1/evaluations/count", h.evalsCount)
	m.HandleFunc("DELETE /v1/evaluations", h.write(h.evalsDelete))
	get("/v1/evaluation/{id}", h.evalGet)
	get("/v1/evaluation/{id}/allocations", h.evalAllocations)

	get("/v1/deployments", h.deploymentsList)
	get("/v1/deployment/{id}", h.deploymentGet)
	get("/v1/deployment/allocations/{id}", h.deploymentAllocations)
	put("/v1/deployment/promote/{id}", h.deploymentPromote)
	put("/v1/deployment/fail/{id}", h.deploymentFail)
	put("/v1/deployment/pause/{id}", h.deploymentPause)
	put("/v1/deployment/allocation-health/{id}", h.deploymentAllocHealth)

	get("/v1/allocations", h.allocsList)
	get("/v1/allocation/{id}", h.allocGet)
	put("/v1/allocation/{id}/stop", h.allocStop)
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/client/allocation/{id}/restart", h.clientRoute(h.nodeOfAlloc("id")))
		m.HandleFunc(method+" /v1/client/allocation/{id}/signal", h.clientRoute(h.nodeOfAlloc("id")))
	}
	m.HandleFunc("GET /v1/client/allocation/{id}/stats", h.clientRoute(h.nodeOfAlloc("id")))
	m.HandleFunc("GET /v1/client/allocation/{id}/checks", h.clientRoute(h.nodeOfAlloc("id")))
	m.HandleFunc("GET /v1/client/fs/logs/{alloc}", h.clientRoute(h.nodeOfAlloc("alloc")))
	for _, op := range []string{"ls", "stat", "cat", "readat", "stream"} {
		m.HandleFunc("GET /v1/client/fs/"+op+"/{alloc}", h.clientRoute(h.nodeOfAlloc("alloc")))
	}
	m.HandleFunc("GET /v1/client/stats", h.clientRoute(h.nodeOfQuery))
	m.HandleFunc("GET /v1/client/metadata", h.clientRoute(h.nodeOfMetaRequest))
	m.HandleFunc("POST /v1/client/metadata", h.clientRoute(h.nodeOfMetaRequest))
	m.HandleFunc("PUT /v1/client/metadata", h.clientRoute(h.nodeOfMetaRequest))

	get("/v1/nodes", h.nodesList)
	get("/v1/node/{id}", h.nodeGet)
	get("/v1/node/{id}/allocations", h.nodeAllocations)
	put("/v1/node/{id}/eligibility", h.nodeEligibility)
	put("/v1/node/{id}/drain", h.nodeDrain)
	put("/v1/node/{id}/purge", h.nodePurge)
	get("/v1/node/pools", h.nodePoolsList)
	put("/v1/node/pools", h.nodePoolsRegister)
	h.registerNodePoolRoutes()
	put("/v1/node/{id}/evaluate", h.nodeEvaluate)

	m.HandleFunc("GET /v1/event/stream", h.eventStream) // local: every server applies the log

	getLocal("/v1/agent/self", h.agentSelf)
	getLocal("/v1/agent/members", h.agentMembers)
	put("/v1/agent/join", h.agentJoin)
	put("/v1/agent/force-leave", h.agentForceLeave)
	m.HandleFunc("GET /v1/agent/health", h.agentHealth)
	getLocal("/v1/agent/servers", h.agentServers)
	m.HandleFunc("PUT /v1/agent/servers", h.local(h.agentServers))
	m.HandleFunc("POST /v1/agent/servers", h.local(h.agentServers))
	getLocal("/v1/agent/schedulers", h.agentSchedulers)
	getLocal("/v1/agent/schedulers/config", h.agentSchedulerConfig)
	m.HandleFunc("PUT /v1/agent/schedulers/config", h.local(h.agentSchedulerConfig))
	m.HandleFunc("POST /v1/agent/schedulers/config", h.local(h.agentSchedulerConfig))
	m.HandleFunc("GET /v1/agent/monitor", h.agentMonitor)
	getLocal("/v1/status/leader", h.statusLeader)
	getLocal("/v1/status/peers", h.statusPeers)
	getLocal("/v1/regions", h.regions)
	m.HandleFunc("GET /v1/metrics", h.metricsHandler)

	get("/v1/operator/raft/configuration", h.operatorRaftConfiguration)
	get("/v1/operator/scheduler/configuration", h.operatorSchedulerGet)
	get("/v1/operator/autopilot/configuration", h.operatorAutopilotGet)
	put("/v1/operator/autopilot/configuration", h.operatorAutopilotSet)
	get("/v1/operator/autopilot/health", h.operatorAutopilotHealth)
	m.HandleFunc("GET "+snapshotPath, h.operatorSnapshotSave)
	put(snapshotPath, h.operatorSnapshotRestore)
	put("/v1/operator/scheduler/configuration", h.operatorSchedulerSet)
	m.HandleFunc("DELETE /v1/operator/raft/peer", h.write(h.operatorRaftRemovePeer))
	get("/v1/operator/keyring/keys", h.keyringList)
	put("/v1/operator/keyring/rotate", h.keyringRotate)
	m.HandleFunc("DELETE /v1/operator/keyring/key/{id}", h.write(h.keyringDelete))
	getLocal("/.well-known/jwks.json", h.jwks)
	getLocal("/.well-known/openid-configuration", h.openIDConfiguration)

	// Client agents, authenticated by the node's secret ID.
	put("/v1/internal/node/register", h.internalNodeRegister)
	put("/v1/internal/node/{id}/heartbeat", h.internalNodeHeartbeat)
	getLocal("/v1/internal/node/{id}/allocs", h.internalNodeAllocs)
	put("/v1/internal/node/{id}/allocs", h.internalAllocUpdate)
	m.HandleFunc("GET /v1/internal/node/{id}/prefetch", h.write(h.internalNodePrefetch)) // leader memory: forwarded
	put("/v1/internal/node/{id}/prefetch", h.internalNodePrefetchReport)

	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Invalid URL path: "+r.URL.Path, http.StatusNotFound)
	})
}
