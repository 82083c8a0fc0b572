package nomad

import (
	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/stream"
)

// EventSubscribe subscribes caller to this server's event stream from
// req.Index, keeping only the events caller may see (req.Allow is set
// here, whatever the request held): variables events need list on their
// path, namespaced events read-job in their namespace, node and node pool
// events node:read, and the rest (ACL objects) management. A nil caller
// (ACLs disabled, or the server itself) sees everything.
func (s *Server) EventSubscribe(caller *acl.ACL, req stream.SubscribeRequest) *stream.Subscription {
	req.Allow = eventsVisibleTo(caller)
	return s.events().Subscribe(req)
}

// eventsVisibleTo returns the filter of the events a caller may see (nil:
// every event).
func eventsVisibleTo(a *acl.ACL) func(stream.Event) bool {
	if a.IsManagement() {
		return nil
	}
	return func(e stream.Event) bool {
		switch {
		case e.Topic == stream.TopicVariables:
			return a.AllowVariableOperation(e.Namespace, e.Key, acl.VariablesCapabilityList)
		case e.Namespace != "":
			return a.AllowNamespaceOperation(e.Namespace, acl.NamespaceCapabilityReadJob)
		case e.Topic == stream.TopicNode || e.Topic == stream.TopicNodePool:
			return a.AllowNodeRead()
		default:
			return false
		}
	}
}
