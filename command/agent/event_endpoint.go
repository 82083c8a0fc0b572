package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/stream"
	"github.com/drover-project/drover/nomad/structs"
)

// eventHeartbeat is how often, in nanoseconds, an idle event stream sends
// `{}` (10s; tests shorten it).
var eventHeartbeat atomic.Int64

func init() { eventHeartbeat.Store(int64(10 * time.Second)) }

// eventTopics are the topics a subscription may name (Nomad's). Drover
// publishes events of the first six, of Service, of Variables and its own
// ImageUpdate (image watch records); the others are accepted and match
// nothing until Drover has their objects.
var eventTopics = map[string]bool{
	"Job": true, "Evaluation": true, "Allocation": true, "Deployment": true, "Node": true,
	"NodePool": true, "Service": true, "ACLToken": true, "ACLPolicy": true, "ACLRole": true,
	"Variables": true, "ImageUpdate": true, "*": true,
}

// parseEventTopics reads the topic parameters ("Topic" or "Topic:key");
// none means every topic.
func parseEventTopics(r *http.Request) (map[stream.Topic][]string, error) {
	raw := r.URL.Query()["topic"]
	if len(raw) == 0 {
		return map[stream.Topic][]string{stream.TopicAll: {"*"}}, nil
	}
	out := map[stream.Topic][]string{}
	for _, t := range raw {
		parts := strings.Split(t, ":")
		key := "*"
		switch {
		case len(parts) == 2:
			key = parts[1]
		case len(parts) != 1:
			return nil, badRequest("Invalid key value pair for topic: %s", t)
		}
		if !eventTopics[parts[0]] {
			return nil, badRequest("Invalid topic %q: want one of Job, Evaluation, Allocation, Deployment, Node, NodePool, Service, ACLToken, ACLPolicy, ACLRole, Variables or *", parts[0])
		}
		if key == "" {
			return nil, badRequest("Invalid key value pair for topic: %s: empty key", t)
		}
		out[stream.Topic(parts[0])] = append(out[stream.Topic(parts[0])], key)
	}
	return out, nil
}

// eventStream serves GET /v1/event/stream: newline-delimited JSON objects,
// {"Index":N,"Events":[...]} per raft entry with matching events, and {}
// every eventHeartbeat while nothing matches. It is served by the server
// it reaches (every server applies the same entries) and ends when the
// client goes away or the agent shuts down.
func (h *HTTPServer) eventStream(w http.ResponseWriter, r *http.Request) {
	req, err := h.parseEventRequest(r)
	if err != nil {
		h.setMeta(w, 0)
		code, msg := errorResponse(err)
		http.Error(w, msg, code)
		return
	}
	sub := h.srv.EventSubscribe(aclOf(r), req)
	flusher, _ := w.(http.Flusher)
	h.setMeta(w, 0)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(eventHeartbeat.Load()))
		batch, err := sub.Next(ctx)
		cancel()
		var msg any
		switch {
		case err == nil:
			msg = eventsToAPI(batch)
		case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
			msg = struct{}{}
		case r.Context().Err() != nil:
			return
		default:
			// The stream ends; the client sees the end of the body and
			// subscribes again.
			h.logger.Debug("event stream closed", "error", err)
			return
		}
		if err := enc.Encode(msg); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// parseEventRequest reads topic, index and namespace.
func (h *HTTPServer) parseEventRequest(r *http.Request) (stream.SubscribeRequest, error) {
	topics, err := parseEventTopics(r)
	if err != nil {
		return stream.SubscribeRequest{}, err
	}
	req := stream.SubscribeRequest{Topics: topics, Namespace: namespace(r)}
	if v := r.URL.Query().Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return req, badRequest("Unable to parse index: %v", err)
		}
		req.Index = idx
	}
	return req, nil
}

// apiEvent is an event as the api client reads it.
type apiEvent struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    map[string]any
}

// eventsToAPI converts a batch to its wire form.
func eventsToAPI(b stream.Batch) *struct {
	Index  uint64
	Events []apiEvent
} {
	out := &struct {
		Index  uint64
		Events []apiEvent
	}{Index: b.Index, Events: make([]apiEvent, 0, len(b.Events))}
	for _, e := range b.Events {
		out.Events = append(out.Events, apiEvent{
			Topic: string(e.Topic), Type: e.Type, Key: e.Key, Namespace: e.Namespace,
			FilterKeys: e.FilterKeys, Index: e.Index, Payload: eventPayload(e),
		})
	}
	return out
}

// eventPayload wraps the event's object under its topic's name, as Nomad
// does ({"Job": {...}}); allocations are sent without their job.
func eventPayload(e stream.Event) map[string]any {
	switch o := e.Payload.(type) {
	case *structs.Job:
		p := map[string]any{"Job": apiconv.JobToAPI(o)}
		if e.Deleted {
			p["Deleted"] = true
		}
		return p
	case *structs.Evaluation:
		return map[string]any{"Evaluation": apiconv.EvalToAPI(o)}
	case *structs.Allocation:
		a := *o
		a.Job = nil
		// Without its job, the allocation names its version beside it
		// (the field of allocation list stubs).
		return map[string]any{"Allocation": &struct {
			*api.Allocation
			JobVersion uint64
		}{apiconv.AllocToAPI(&a), o.JobVersion}}
	case *structs.Deployment:
		return map[string]any{"Deployment": apiconv.DeploymentToAPI(o)}
	case *structs.Node:
		return map[string]any{"Node": nodeToWire(o)}
	case *structs.NodePool:
		return map[string]any{"NodePool": nodePoolToAPI(o)}
	case *structs.ServiceRegistration:
		return map[string]any{"Service": apiconv.ServiceRegistrationToAPI(o)}
	case *structs.ImageWatch:
		return map[string]any{"ImageWatch": o}
	case structs.VariableMeta:
		m := variableMetaToAPI(&o)
		m.Lock = nil // lock IDs are for writers only
		return map[string]any{"Variable": m}
	}
	return map[string]any{"Error": fmt.Sprintf("no wire form for %T", e.Payload)}
}

// wireNode is a node as Nomad sends it: with SecretID present and empty.
type wireNode struct {
	*api.Node
	SecretID string
}

// nodeToWire converts n for API readers.
func nodeToWire(n *structs.Node) *wireNode {
	return &wireNode{Node: apiconv.NodeToAPI(n)}
}
