// Package ui is Drover's web UI: HTML pages rendered from embedded
// html/template files, with plain JavaScript modules and CSS written here,
// served at /ui/ by every agent. It has no build step and vendors nothing.
//
// The server renders each page's frame (navigation, headings, the empty
// tables and the rollout canvas) and names the object it shows in data
// attributes; the scripts then read the same Nomad-compatible /v1 HTTP API
// as any client, with the X-Nomad-Token kept in the browser's session
// storage, and keep the page live with blocking queries (static/api.js
// holds the one place that would move to the event stream).
//
// The rollout view (static/rollout.js) draws every node of a job as one
// cell on a canvas, coloured by the version it runs and its health, grouped
// by the wave that placed it; its pure model (cells, states, waves) is
// separate from the drawing.
//
// Imported by command/agent only; it imports nothing of Drover's.
package ui
