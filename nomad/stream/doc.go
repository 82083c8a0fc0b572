// Package stream is the server's event stream: the events a committed raft
// entry produced (a job registered, an allocation updated, a node drained),
// kept in a bounded buffer that subscribers read from any index still in it.
//
// The FSM turns each applied entry's state changes into events
// (EventsFromChanges) and publishes them to its Broker; /v1/event/stream
// subscribes to the broker and sends what matches the request's topics,
// keys and namespace. Event payloads are the state store's shared objects
// (structs types); the HTTP edge converts them to the API's shapes.
//
// Who may import it: the FSM (nomad/fsm), the server (nomad) and the HTTP
// layer (command/agent). It imports only nomad/structs and nomad/state.
package stream
