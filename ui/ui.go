package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

//go:embed templates/*.html static/*
var files embed.FS

// page is what a template renders: the page kind the scripts dispatch on
// and the object it shows.
type page struct {
	Kind         string // jobs, job, rollout, alloc, nodes, node, notfound
	Title        string
	Nav          string // the navigation entry to mark current
	JobID        string
	Namespace    string
	DeploymentID string
	AllocID      string
	NodeID       string
	Path         string
	Asset        string // cache-busting suffix of the static files
	// First is the API read the page's scripts start with, begun by
	// boot.js before the modules have loaded.
	First string
}

// Handler serves the UI under /ui/.
type Handler struct {
	mux    *http.ServeMux
	pages  map[string]*template.Template
	asset  string
	static map[string][]byte // name -> contents, imports versioned
}

// New parses the embedded templates; a template that does not parse is a
// build mistake, so it panics.
func New() *Handler {
	h := &Handler{mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	layout := template.Must(template.ParseFS(files, "templates/layout.html"))
	for _, kind := range []string{"jobs", "job", "rollout", "alloc", "nodes", "node", "notfound"} {
		t := template.Must(layout.Clone())
		h.pages[kind] = template.Must(t.ParseFS(files, "templates/"+kind+".html"))
	}
	h.asset = assetVersion()
	h.static = staticFiles(h.asset)
	h.routes()
	return h
}

// assetVersion hashes the static files, so that a new binary's scripts are
// never mixed with a browser's cached old ones.
func assetVersion() string {
	sum := sha256.New()
	names, _ := fs.Glob(files, "static/*")
	sort.Strings(names)
	for _, n := range names {
		b, _ := files.ReadFile(n)
		sum.Write([]byte(n))
		sum.Write(b)
	}
	return hex.EncodeToString(sum.Sum(nil))[:12]
}

// moduleImport matches a relative import of one of the static modules.
var moduleImport = regexp.MustCompile(`(from '\./[a-z]+\.js)'`)

// staticFiles reads the static files, with every module import naming the
// asset version, so that a page's modules are all cached for good and a
// warm page load fetches none of them.
func staticFiles(asset string) map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(files, "static/*")
	for _, n := range names {
		b, _ := files.ReadFile(n)
		if strings.HasSuffix(n, ".js") {
			b = moduleImport.ReplaceAll(b, []byte("${1}?v="+asset+"'"))
		}
		out[path.Base(n)] = b
	}
	return out
}

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /ui/{$}", h.render("jobs", nil))
	m.HandleFunc("GET /ui/jobs", h.render("jobs", nil))
	m.HandleFunc("GET /ui/jobs/{$}", h.render("jobs", nil))
	m.HandleFunc("GET /ui/jobs/{id}", h.render("job", jobParams))
	m.HandleFunc("GET /ui/jobs/{id}/rollout", h.render("rollout", jobParams))
	m.HandleFunc("GET /ui/allocations/{id}", h.render("alloc", func(r *http.Request, p *page) {
		p.AllocID = r.PathValue("id")
		p.Title = "Allocation " + shortID(p.AllocID)
	}))
	for _, base := range []string{"/ui/nodes", "/ui/clients"} {
		m.HandleFunc("GET "+base, h.render("nodes", nil))
		m.HandleFunc("GET "+base+"/{$}", h.render("nodes", nil))
		m.HandleFunc("GET "+base+"/{id}", h.render("node", func(r *http.Request, p *page) {
			p.NodeID = r.PathValue("id")
			p.Title = "Node " + shortID(p.NodeID)
		}))
	}
	m.HandleFunc("GET /ui/static/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		b, ok := h.static[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("v") == h.asset {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
		w.Header().Set("ETag", `"`+h.asset+`"`)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		h.write(w, "notfound", &page{Kind: "notfound", Title: "Not found", Path: r.URL.Path})
	})
}

// jobParams reads the job of a /ui/jobs/{id} path: "<id>@<namespace>" as
// Nomad's UI writes it, else the namespace query parameter, else default.
func jobParams(r *http.Request, p *page) {
	id, ns := r.PathValue("id"), r.URL.Query().Get("namespace")
	if i := strings.LastIndex(id, "@"); i > 0 {
		id, ns = id[:i], id[i+1:]
	}
	if ns == "" {
		ns = "default"
	}
	p.JobID, p.Namespace = id, ns
	p.DeploymentID = r.URL.Query().Get("deployment")
	p.Title = id
	if p.Kind == "rollout" {
		p.Title = "Rollout of " + id
		p.First = "/v1/job/" + url.PathEscape(id) + "/rollout?namespace=" + url.QueryEscape(ns)
		if p.DeploymentID != "" {
			p.First += "&deployment=" + url.QueryEscape(p.DeploymentID)
		}
	}
}

func (h *Handler) render(kind string, params func(*http.Request, *page)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := &page{Kind: kind, Path: r.URL.Path}
		switch kind {
		case "jobs":
			p.Title, p.Nav = "Jobs", "jobs"
		case "nodes":
			p.Title, p.Nav = "Nodes", "nodes"
		case "node":
			p.Nav = "nodes"
		default:
			p.Nav = "jobs"
		}
		if params != nil {
			params(r, p)
		}
		h.write(w, kind, p)
	}
}

func (h *Handler) write(w http.ResponseWriter, kind string, p *page) {
	p.Asset = h.asset
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	if err := h.pages[kind].ExecuteTemplate(w, "layout", p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
