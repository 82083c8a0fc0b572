package agent

import (
	"net/http"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/ui"
	"github.com/drover-project/drover/wire"
)

// registeredRoute is one entry of the route table (for the test that walks
// it).
type registeredRoute struct {
	method, path string
	rule         authRule
}

// registerRoutes lists every endpoint with its authorization rule (see
// auth.go). Writes accept PUT and POST, as Nomad does.
func (h *HTTPServer) registerRoutes() {
	handle := func(method, path string, rule authRule, hf http.HandlerFunc) {
		h.routes = append(h.routes, registeredRoute{method: method, path: path, rule: rule})
		h.mux.HandleFunc(method+" "+path, hf)
	}
	put := func(path string, rule authRule, fn handlerFunc) {
		handle("PUT", path, rule, h.write(h.authorize(rule, fn)))
		handle("POST", path, rule, h.write(h.authorize(rule, fn)))
	}
	del := func(path string, rule authRule, fn handlerFunc) {
		handle("DELETE", path, rule, h.write(h.authorize(rule, fn)))
	}
	get := func(path string, rule authRule, fn handlerFunc) {
		handle("GET", path, rule, h.read(h.authorize(rule, fn)))
	}
	getLocal := func(path string, rule authRule, fn handlerFunc) {
		handle("GET", path, rule, h.local(h.authorize(rule, fn)))
	}
	getRaw := func(path string, rule authRule, hf http.Handler) { handle("GET", path, rule, h.guard(rule, hf)) }
	// putLocal: a write this server answers itself (its own agent's state,
	// or pure work such as parsing).
	putLocal := func(path string, rule authRule, fn handlerFunc) {
		handle("PUT", path, rule, h.local(h.authorize(rule, fn)))
		handle("POST", path, rule, h.local(h.authorize(rule, fn)))
	}
	// writeRaw: a write handled as a stream or by a client agent.
	writeRaw := func(path string, rule authRule, hf http.Handler) {
		handle("PUT", path, rule, h.guard(rule, hf))
		handle("POST", path, rule, h.guard(rule, hf))
	}

	const (
		readJob   = acl.NamespaceCapabilityReadJob
		listJobs  = acl.NamespaceCapabilityListJobs
		submitJob = acl.NamespaceCapabilitySubmitJob
	)

	get("/v1/jobs", nsCap(listJobs), h.jobsList)
	putLocal("/v1/jobs/parse", nsCap(acl.NamespaceCapabilityParseJob), h.jobsParse) // pure: any server answers
	// Search reads with a body; the answer holds only what the token may
	// see (the server filters it: nomad.Server.SearchPrefix).
	handle("PUT", "/v1/search", caller(), h.read(h.authorize(caller(), h.searchPrefix)))
	handle("POST", "/v1/search", caller(), h.read(h.authorize(caller(), h.searchPrefix)))
	handle("PUT", "/v1/search/fuzzy", caller(), h.read(h.authorize(caller(), h.searchFuzzy)))
	handle("POST", "/v1/search/fuzzy", caller(), h.read(h.authorize(caller(), h.searchFuzzy)))
	put("/v1/jobs", inHandler(submitJob), h.jobsRegister)
	put("/v1/validate/job", nsCap(readJob), h.jobValidate)
	get("/v1/job/{id}", nsCap(readJob), h.jobGet)
	put("/v1/job/{id}", inHandler(submitJob), h.jobsRegister)
	del("/v1/job/{id}", nsCap(submitJob), h.jobDeregister)
	get("/v1/job/{id}/summary", nsCap(readJob), h.jobSummary)
	get("/v1/job/{id}/allocations", nsCap(readJob), h.jobAllocations)
	get("/v1/job/{id}/evaluations", nsCap(readJob), h.jobEvaluations)
	get("/v1/job/{id}/deployment", nsCap(readJob), h.jobLatestDeployment)
	get("/v1/job/{id}/deployments", nsCap(readJob), h.jobDeployments)
	get("/v1/job/{id}/versions", nsCap(readJob), h.jobVersions)
	get("/v1/job/{id}/submission", nsCap(readJob), h.jobSubmission)
	put("/v1/job/{id}/plan", inHandler(submitJob), h.jobPlan)
	put("/v1/job/{id}/revert", nsCap(submitJob), h.jobRevert)
	put("/v1/job/{id}/stable", nsCap(submitJob), h.jobStable)
	put("/v1/job/{id}/evaluate", nsCap(submitJob), h.jobEvaluate)
	put("/v1/job/{id}/periodic/force", nsCap(submitJob), h.jobPeriodicForce)
	put("/v1/job/{id}/dispatch", nsCap(acl.NamespaceCapabilityDispatchJob), h.jobDispatch)
	put("/v1/job/{id}/scale", nsCap(acl.NamespaceCapabilityScaleJob), h.jobScale)
	get("/v1/job/{id}/scale", nsCap(acl.NamespaceCapabilityReadJobScaling), h.jobScaleStatus)
	get("/v1/scaling/policies", nsCap(acl.NamespaceCapabilityListScalingPolicies), h.scalingPoliciesList)
	get("/v1/scaling/policy/{id}", nsCap(acl.NamespaceCapabilityReadScalingPolicy), h.scalingPolicyGet)
	get("/v1/job/{id}/image-updates", nsCap(readJob), h.jobImageUpdates)
	// The web UI's rollout view in one read (Drover's own); nodes only for a token that may read them.
	get("/v1/job/{id}/rollout", nsCap(readJob), h.jobRollout)
	put("/v1/job/{id}/image-updates/check", nsCap(submitJob), h.jobImageCheck)
	put("/v1/job/{id}/image-updates/clear-bad", nsCap(submitJob), h.jobImageClearBad)
	put("/v1/job/{id}/image-updates/approve", nsCap(submitJob), h.jobImageApprove)

	get("/v1/evaluations", nsCap(readJob), h.evalsList)
	get("/v1/evaluations/count", nsCap(readJob), h.evalsCount)
	del("/v1/evaluations", management(), h.evalsDelete)
	get("/v1/evaluation/{id}", objectCap(readJob, evalNS), h.evalGet)
	get("/v1/evaluation/{id}/allocations", objectCap(readJob, evalNS), h.evalAllocations)

	get("/v1/deployments", nsCap(readJob), h.deploymentsList)
	get("/v1/deployment/{id}", objectCap(readJob, deploymentNS), h.deploymentGet)
	get("/v1/deployment/allocations/{id}", objectCap(readJob, deploymentNS), h.deploymentAllocations)
	get(wire.RouteDeploymentGates+"{id}", objectCap(readJob, deploymentNS), h.deploymentGates)
	put("/v1/deployment/promote/{id}", objectCap(submitJob, deploymentNS), h.deploymentPromote)
	put("/v1/deployment/fail/{id}", objectCap(submitJob, deploymentNS), h.deploymentFail)
	put("/v1/deployment/pause/{id}", objectCap(submitJob, deploymentNS), h.deploymentPause)
	put("/v1/deployment/allocation-health/{id}", objectCap(submitJob, deploymentNS), h.deploymentAllocHealth)

	// Volumes and plugins: Drover has no CSI ones (csi_endpoint.go);
	// dynamic host volumes are host_volume_endpoint.go's. The list handler
	// checks the capability of the volume type it is asked for.
	get("/v1/volumes", caller(), h.volumesList)
	get("/v1/volume/csi/{id}", nsCap(acl.NamespaceCapabilityCSIReadVolume), h.csiVolumeGet)
	put("/v1/volume/csi/{id}", nsCap(acl.NamespaceCapabilityCSIWriteVolume), h.csiVolumeRegister)
	put("/v1/volume/csi/{id}/create", nsCap(acl.NamespaceCapabilityCSIWriteVolume), h.csiVolumeRegister)
	del("/v1/volume/csi/{id}", nsCap(acl.NamespaceCapabilityCSIWriteVolume), h.csiVolumeDeregister)
	del("/v1/volume/csi/{id}/detach", nsCap(acl.NamespaceCapabilityCSIWriteVolume), h.csiVolumeDeregister)
	put("/v1/volume/host/create", caller(), h.hostVolumeCreate)     // the server checks the volume's namespace
	put("/v1/volume/host/register", caller(), h.hostVolumeRegister) // the server checks the volume's namespace
	get("/v1/volume/host/{id}", caller(), h.hostVolumeGet)
	del("/v1/volume/host/{id}", caller(), h.hostVolumeDelete)
	get("/v1/volumes/external", nsCap(acl.NamespaceCapabilityCSIListVolume), h.csiPluginVolumesList)
	get("/v1/volumes/snapshot", nsCap(acl.NamespaceCapabilityCSIListVolume), h.csiPluginVolumesList)
	get("/v1/plugins", pluginList(), h.csiPluginsList)
	get("/v1/plugin/csi/{id}", pluginRead(), h.csiPluginGet)

	get("/v1/allocations", nsCap(readJob), h.allocsList)
	get("/v1/allocation/{id}", objectCap(readJob, allocNS("id")), h.allocGet)
	put("/v1/allocation/{id}/stop", objectCap(acl.NamespaceCapabilityAllocLifecycle, allocNS("id")), h.allocStop)
	writeRaw("/v1/client/allocation/{id}/restart", objectCap(acl.NamespaceCapabilityAllocLifecycle, allocNS("id")), h.clientRoute(h.nodeOfAlloc("id")))
	writeRaw("/v1/client/allocation/{id}/signal", objectCap(acl.NamespaceCapabilityAllocLifecycle, allocNS("id")), h.clientRoute(h.nodeOfAlloc("id")))
	for _, op := range []string{"ls", "stat", "cat", "readat", "stream"} {
		getRaw("/v1/client/fs/"+op+"/{alloc}", objectCap(acl.NamespaceCapabilityReadFS, allocNS("alloc")), h.clientRoute(h.nodeOfAlloc("alloc")))
	}
	// exec: a websocket; errors go to the caller as close frames, so the
	// handler checks the rule itself (see allocExec).
	execRule := objectCap(acl.NamespaceCapabilityAllocExec, allocNS("id"))
	handle("GET", "/v1/client/allocation/{id}/exec", execRule, h.allocExec(execRule))
	// snapshot: a replacement's client fetching this allocation's
	// ephemeral data (ephemeral_disk migrate); the node's client checks
	// the migrate token, derived from its secret (structs.MigrateToken).
	getRaw("/v1/client/allocation/{id}/snapshot", nodeSecret(), h.clientRoute(h.nodeOfAlloc("id")))
	getRaw("/v1/client/allocation/{id}/stats", objectCap(readJob, allocNS("id")), h.clientRoute(h.nodeOfAlloc("id")))
	getRaw("/v1/client/allocation/{id}/checks", objectCap(readJob, allocNS("id")), h.clientRoute(h.nodeOfAlloc("id")))
	getRaw("/v1/client/fs/logs/{alloc}", objectCap(acl.NamespaceCapabilityReadLogs, allocNS("alloc")), h.clientRoute(h.nodeOfAlloc("alloc")))
	getRaw("/v1/client/stats", nodeRead(), h.clientRoute(h.nodeOfQuery))
	getRaw("/v1/client/metadata", nodeRead(), h.clientRoute(h.nodeOfMetaRequest))
	writeRaw("/v1/client/metadata", nodeWrite(), h.clientRoute(h.nodeOfMetaRequest))

	get("/v1/nodes", nodeRead(), h.nodesList)
	get("/v1/node/{id}", nodeRead(), h.nodeGet)
	get("/v1/node/{id}/allocations", nodeRead(), h.nodeAllocations)
	put("/v1/node/{id}/eligibility", nodeWrite(), h.nodeEligibility)
	put("/v1/node/{id}/drain", nodeWrite(), h.nodeDrain)
	put("/v1/node/{id}/purge", nodeWrite(), h.nodePurge)
	put("/v1/node/{id}/evaluate", nodeWrite(), h.nodeEvaluate)
	get("/v1/node/pools", nodeRead(), h.nodePoolsList)
	put("/v1/node/pools", management(), h.nodePoolsRegister)
	h.registerNodePoolRoutes()

	getRaw("/v1/event/stream", caller(), http.HandlerFunc(h.eventStream)) // local: every server applies the log; events filtered by the token

	getLocal("/v1/agent/self", agentRead(), h.agentSelf)
	getLocal("/v1/agent/members", nodeRead(), h.agentMembers)
	put("/v1/agent/join", agentWrite(), h.agentJoin)
	put("/v1/agent/force-leave", agentWrite(), h.agentForceLeave)
	getRaw("/v1/agent/health", public(), http.HandlerFunc(h.agentHealth))
	getLocal("/v1/agent/servers", agentRead(), h.agentServers)
	putLocal("/v1/agent/servers", agentWrite(), h.agentServers)
	getLocal("/v1/agent/schedulers", agentRead(), h.agentSchedulers)
	getLocal("/v1/agent/schedulers/config", agentRead(), h.agentSchedulerConfig)
	putLocal("/v1/agent/schedulers/config", agentWrite(), h.agentSchedulerConfig)
	getRaw("/v1/agent/monitor", agentRead(), http.HandlerFunc(h.agentMonitor))
	getRaw("/v1/agent/pprof/{profile}", agentWrite(), http.HandlerFunc(h.agentPprof))
	getLocal("/v1/status/leader", public(), h.statusLeader)
	getLocal("/v1/status/peers", public(), h.statusPeers)
	getLocal("/v1/regions", public(), h.regions)
	getRaw("/v1/metrics", public(), http.HandlerFunc(h.metricsHandler))
	put("/v1/system/gc", management(), h.systemGC)

	get("/v1/operator/raft/configuration", operatorRead(), h.operatorRaftConfiguration)
	get("/v1/operator/scheduler/configuration", operatorRead(), h.operatorSchedulerGet)
	put("/v1/operator/scheduler/configuration", operatorWrite(), h.operatorSchedulerSet)
	get("/v1/operator/autopilot/configuration", operatorRead(), h.operatorAutopilotGet)
	put("/v1/operator/autopilot/configuration", operatorWrite(), h.operatorAutopilotSet)
	get("/v1/operator/autopilot/health", operatorRead(), h.operatorAutopilotHealth)
	getRaw(snapshotPath, management(), http.HandlerFunc(h.operatorSnapshotSave))
	put(snapshotPath, management(), h.operatorSnapshotRestore)
	del("/v1/operator/raft/peer", operatorWrite(), h.operatorRaftRemovePeer)
	get("/v1/operator/keyring/keys", management(), h.keyringList)
	put("/v1/operator/keyring/rotate", management(), h.keyringRotate)
	del("/v1/operator/keyring/key/{id}", management(), h.keyringDelete)
	getLocal("/.well-known/jwks.json", public(), h.jwks)
	getLocal("/.well-known/openid-configuration", public(), h.openIDConfiguration)

	h.registerACLRoutes(get, put, del)
	h.registerVariableRoutes(get, put, del)
	h.registerServiceRoutes(get, put, del)

	// Client agents, authenticated by the node's secret ID.
	put(wire.RouteNodeRegister, nodeSecret(), h.internalNodeRegister)
	put(wire.RouteNodeHeartbeat, nodeSecret(), h.internalNodeHeartbeat)
	getLocal(wire.RouteNodeAllocs, nodeSecret(), h.internalNodeAllocs)
	put(wire.RouteNodeAllocs, nodeSecret(), h.internalAllocUpdate)
	handle("GET", wire.RouteNodePrefetch, nodeSecret(), h.write(h.internalNodePrefetch)) // leader memory: forwarded
	put(wire.RouteNodePrefetch, nodeSecret(), h.internalNodePrefetchReport)
	put(wire.RouteNodeIdentities, nodeSecret(), h.internalIdentityRenew)
	getLocal(wire.RouteNodeHostVolumes, nodeSecret(), h.internalNodeHostVolumes)
	handle("PUT", wire.RouteNodeACLResolve, nodeSecret(), h.local(h.authorize(nodeSecret(), h.internalACLResolve)))

	// The web UI (static pages that read the API with the user's own
	// token); the root redirects to it.
	handle("GET", "/ui/", public(), ui.New().ServeHTTP)
	handle("GET", "/{$}", public(), http.RedirectHandler("/ui/", http.StatusTemporaryRedirect).ServeHTTP)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Invalid URL path: "+r.URL.Path, http.StatusNotFound)
	})
}
