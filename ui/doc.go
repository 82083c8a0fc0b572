// Package ui is Drover's web UI: HTML pages rendered from embedded
// html/template files, with plain JavaScript modules and CSS written here,
// served at /ui/ by every agent. It has no build step and vendors nothing.
//
// The server renders each page's frame (navigation, headings, the empty
// tables and the rollout canvas) and names the object it shows in data
// attributes; the scripts then read the same Nomad-compatible /v1 HTTP API
// as any client, with the X-Nomad-Token kept in the browser's session
// storage. Pages stay live on the agent's event stream (/v1/event/stream,
// one per page, static/api.js): a watched path is read again when an event
// of its topics arrives, and when the stream cannot be had, blocking
// queries take over.
//
// The rollout view (static/rollout.js) draws every node of a job as one
// cell on a canvas, coloured by the version it runs and its health, grouped
// by the wave that placed it; its pure model (cells, states, waves) is
// separate from the drawing. It loads from one compact read,
// /v1/job/<id>/rollout (begun by static/boot.js before the modules load),
// then applies the stream's allocation, node, deployment and job events
// itself and redraws only the cells that changed. Modules import each other
// by asset version, so a warm page load fetches none of them.
//
// Imported by command/agent only; it imports nothing of Drover's.
package ui
