package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// The corpusRuns entries of the files about artifacts, templates, dynamic
// blocks and file functions.

// artifactsFetchRun: the four artifacts are fetched before the task
// starts. The file's hosts do not exist here: prepare serves them from an
// HTTP server the test starts, a host's URLs under /<host>/ of it (http,
// not https), the git repository through git http-backend. The release
// archive holds bin/render, a script running the probe ("report") with
// the file's arguments, so the file's command runs as written. The file's
// checksum is sha256("test"), which no archive has: prepare sets it to the
// served archive's sha256 (and the check requires that a wrong one fails
// the download, named "report-fetch-badsum"). The server answers only
// the interpolated release path and settings.json only with the
// interpolated header. periodic-cron's job is "report" too: this one runs
// as "report-fetch". The task names no user, so chown = true gives the
// repository to root, which already owns it here: not observable.
var artifactsFetchRun = func() corpusRun {
	var (
		mu      sync.Mutex
		auth    []string // Authorization headers of the settings.json requests
		seed    []byte
		tagHead string
	)
	settings := []byte(`{"format": "pdf"}` + "\n")
	return corpusRun{
		prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			dir := t.TempDir()
			render := "#!/bin/sh\nexec " + cc.probeBin + " probe report \"$@\"\n"
			tool := tarGz(t, map[string]string{"bin/render": render})
			seed = tarGz(t, map[string]string{"seed.sql": "insert into t values (1);\n"})
			tagHead = templatesRepo(t, filepath.Join(dir, "git", "ops", "templates.git"))
			backend, err := exec.Command("git", "--exec-path").Output()
			require.NoError(t, err)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /releases.example.com/tool/2026.11/tool_linux_amd64.tar.gz", func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write(tool)
			})
			mux.HandleFunc("GET /config.example.com/report/settings.json", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				auth = append(auth, r.Header.Get("Authorization"))
				mu.Unlock()
				if r.Header.Get("Authorization") != "Bearer 2026.11" {
					http.Error(w, "unauthorized", http.StatusUnauthorized)
					return
				}
				_, _ = w.Write(settings)
			})
			mux.HandleFunc("GET /data.example.com/seed.tar.gz", func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write(seed)
			})
			mux.Handle("/git.example.com/", &cgi.Handler{
				Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
				Root: "/git.example.com",
				Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Join(dir, "git"), "GIT_HTTP_EXPORT_ALL=1"},
			})
			web := httptest.NewServer(mux)
			t.Cleanup(web.Close)

			require.Equal(t, "report", *job.ID)
			job.ID, job.Name = new("report-fetch"), new("report-fetch")
			task := corpusTask(t, job, "render", "render")
			for _, a := range task.Artifacts {
				src := *a.GetterSource
				require.Contains(t, src, "https://", "the file's sources are https URLs")
				a.GetterSource = new(strings.Replace(src, "https://", web.URL+"/", 1))
			}
			require.Equal(t, "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", task.Artifacts[0].GetterOptions["checksum"])
			sum := sha256.Sum256(tool)
			task.Artifacts[0].GetterOptions["checksum"] = "sha256:" + hex.EncodeToString(sum[:])
			task.Env = map[string]string{"PROBE_SHOW": strings.Join([]string{
				"${NOMAD_ALLOC_DIR}/settings.json", "${NOMAD_TASK_DIR}/templates/README", "${NOMAD_TASK_DIR}/templates/.git/shallow",
			}, ":")}

			// The same task with the file's checksum: its download fails.
			bad := corpusJob(t, "artifacts-fetch")
			bad.ID, bad.Name = new("report-fetch-badsum"), new("report-fetch-badsum")
			bad.TaskGroups[0].Tasks[0].Artifacts = []*api.TaskArtifact{{
				GetterSource:  task.Artifacts[0].GetterSource,
				GetterOptions: map[string]string{"checksum": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
				RelativeDest:  new("local/tool"),
			}}
			bad.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
			bad.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail")}
			cc.register(t, bad)
		},
		check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
			s := cc.waitAllocs(t, "report-fetch", 1, "complete", nil)[0]
			a, _, err := cc.c.Allocations().Info(s.ID, nil)
			require.NoError(t, err)
			rep := cc.reportOf(t, s.ID, "render", nil)
			allocDir := rep.Env["NOMAD_ALLOC_DIR"]
			require.NotEmpty(t, allocDir)
			require.Equal(t, []string{"--settings", allocDir + "/settings.json"}, rep.Args,
				"local/tool/bin/render, unpacked from the checked archive, ran with the file's args")
			require.Equal(t, string(settings), rep.Files[allocDir+"/settings.json"], `mode = "file" into ../alloc/settings.json`)
			mu.Lock()
			require.Contains(t, auth, "Bearer 2026.11", "the header, interpolated")
			mu.Unlock()
			taskDir := rep.Env["NOMAD_TASK_DIR"]
			require.Equal(t, "templates v1.4.0\n", rep.Files[taskDir+"/templates/README"], `ref = "v1.4.0", not the branch's head`)
			require.Equal(t, tagHead+"\n", rep.Files[taskDir+"/templates/.git/shallow"], "depth = 1: a shallow clone at the tag")

			tool, _, err := cc.c.AllocFS().List(a, "render/local/tool", nil)
			require.NoError(t, err)
			require.Len(t, tool, 1, "the archive is unpacked, not kept: %+v", tool)
			require.Equal(t, "bin", tool[0].Name)
			r, err := cc.c.AllocFS().Cat(a, "render/local/seed.tar.gz", nil)
			require.NoError(t, err)
			defer r.Close()
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, seed, got, "archive = false: kept packed, in local/ (no destination)")

			bad := cc.waitAllocs(t, "report-fetch-badsum", 1, "failed", nil)[0]
			events := bad.TaskStates["render"].Events
			var msgs []string
			for _, e := range events {
				msgs = append(msgs, e.Type+": "+e.DisplayMessage)
			}
			require.Contains(t, strings.Join(msgs, "\n"), "Failed Artifact Download", "the file's checksum does not match the archive")
			require.Contains(t, strings.Join(msgs, "\n"), "Checksums did not match", msgs)
		},
	}
}()

// tarGz is a tar.gz of files (name -> content; bin/ files executable).
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		mode := int64(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return b.Bytes()
}

// templatesRepo makes the bare repository bare: tag v1.4.0 has README
// "templates v1.4.0", the branch main a later commit. It returns the
// tag's commit.
func templatesRepo(t *testing.T, bare string) string {
	t.Helper()
	work := t.TempDir()
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git(work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "README"), []byte("templates v1.4.0\n"), 0o644))
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "v1.4.0")
	git(work, "tag", "v1.4.0")
	tag := git(work, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(work, "README"), []byte("templates main\n"), 0o644))
	git(work, "commit", "-q", "-am", "later")
	require.NoError(t, os.MkdirAll(filepath.Dir(bare), 0o755))
	git(work, "clone", "-q", "--bare", work, bare)
	return tag
}

// dynamicBlocksRun: the dynamic blocks make the ports http (to 8080) and
// metrics (to 9090), one service per port, the two bind mounts, a
// template per variable entry and the two poststart sidecars. Every task
// runs the probe image; the mounts' host paths are not here, so they bind
// the task's local and secrets directories at the file's targets. The
// services are checked on the registered job: /v1/services does not list
// them yet (docs/compatibility.md).
var dynamicBlocksRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		gw := corpusTask(t, job, "gateway", "gateway")
		cc.probe(gw, "hold", "/local/env.d/log_level", "/local/env.d/region", "/etc/envoy/env.d/region")
		mounts := gw.Config["mount"].([]map[string]any)
		require.Len(t, mounts, 2)
		for _, m := range mounts {
			switch m["source"] {
			case "/etc/envoy":
				m["source"] = "local"
			case "/var/run/envoy":
				m["source"] = "secrets"
			}
		}
		for _, name := range []string{"fluentbit", "statsd"} {
			task := corpusTask(t, job, "gateway", name)
			require.Equal(t, "ghcr.io/example/"+name+":latest", task.Config["image"])
			cc.probe(task, "hold")
		}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		s := cc.waitAllocs(t, "gateway", 1, "running", nil)[0]
		rep := cc.reportOf(t, s.ID, "gateway", nil)
		require.Equal(t, "LOG_LEVEL=info\n", rep.Files["/local/env.d/log_level"], "template per extra_env entry, destination lower(key)")
		require.Equal(t, "REGION=eu\n", rep.Files["/local/env.d/region"])
		require.Equal(t, "REGION=eu\n", rep.Files["/etc/envoy/env.d/region"], "the first dynamic mount")
		require.Equal(t, corpusNodeOf(t, cc, s.NodeID).name, rep.Env["NODE"], "${node.unique.name}")
		require.Equal(t, "8080", rep.Env["NOMAD_PORT_http"])
		require.Equal(t, "9090", rep.Env["NOMAD_PORT_metrics"])

		a, _, err := cc.c.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		ports := map[string]api.PortMapping{}
		for _, p := range a.AllocatedResources.Shared.Ports {
			ports[p.Label] = p
		}
		require.Len(t, ports, 2)
		for label, to := range map[string]int{"http": 8080, "metrics": 9090} {
			require.Equal(t, to, ports[label].To, label)
			require.NotZero(t, ports[label].Value, label)
			require.Equal(t, fmt.Sprint(ports[label].Value), rep.Env["NOMAD_HOST_PORT_"+label], label)
		}
		ins := cc.inspect(t, s.ID, "gateway")
		targets := map[string]string{}
		for _, m := range ins.Mounts {
			targets[m.Destination] = string(m.Type)
		}
		require.Equal(t, "bind", targets["/etc/envoy"], "%+v", ins.Mounts)
		require.Equal(t, "bind", targets["/var/run/envoy"], "%+v", ins.Mounts)

		for _, name := range []string{"fluentbit", "statsd"} {
			side := cc.reportOf(t, s.ID, name, nil)
			require.Equal(t, name, side.Env["NOMAD_TASK_NAME"], "a task per sidecar")
		}
		a, _, err = cc.c.Allocations().Info(s.ID, nil) // the sidecars' states, now they started
		require.NoError(t, err)
		for _, name := range []string{"fluentbit", "statsd"} {
			st := a.TaskStates[name]
			gwStart := a.TaskStates["gateway"].StartedAt
			require.NotNil(t, st)
			require.False(t, st.StartedAt.Before(gwStart), "%s is poststart: started %v, gateway %v", name, st.StartedAt, gwStart)
		}

		got, _, err := cc.c.Jobs().Info("gateway", nil)
		require.NoError(t, err)
		svcs := map[string]string{}
		for _, sv := range got.TaskGroups[0].Services {
			svcs[sv.Name] = sv.PortLabel + "/" + sv.Provider
		}
		require.Equal(t, map[string]string{"gateway-http": "http/nomad", "gateway-metrics": "metrics/nomad"}, svcs)
	},
}

// dynamicNestedRun: a group per workers entry, each with its queue as
// argument and env and its memory; only mail's entry has env entries, so
// only its task renders a template (env = true: SMTP_HOST in its env).
var dynamicNestedRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		for _, g := range []string{"mail", "thumbs"} {
			task := corpusTask(t, job, g, "worker")
			require.Equal(t, "ghcr.io/example/worker:8", task.Config["image"])
			cc.probe(task, "hold", "/local/SMTP_HOST.env")
		}
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		allocs := cc.waitAllocs(t, "workers", 2, "running", nil)
		byGroup := map[string]string{}
		for _, s := range allocs {
			byGroup[s.TaskGroup] = s.ID
		}
		for group, want := range map[string]struct {
			queue string
			mem   int
		}{"mail": {"emails", 128}, "thumbs": {"images", 512}} {
			id := byGroup[group]
			require.NotEmpty(t, id, "a group %s: %v", group, byGroup)
			rep := cc.reportOf(t, id, "worker", nil)
			require.Equal(t, []string{"--queue", want.queue}, rep.Args, group)
			require.Equal(t, want.queue, rep.Env["QUEUE"], group)
			requireResources(t, cc, id, "worker", 0, want.mem, 0)
			if group == "mail" {
				require.Equal(t, "SMTP_HOST=smtp.internal", rep.Files["/local/SMTP_HOST.env"])
				require.Equal(t, "smtp.internal", rep.Env["SMTP_HOST"], "env = true")
			} else {
				require.Empty(t, rep.Files["/local/SMTP_HOST.env"], "no env entries: no template")
				require.NotContains(t, rep.Env, "SMTP_HOST")
			}
		}
	},
}

// functionsFilesRun: file() and fileescaped() results are the task's
// templates (rendered: the group has no port http, so env gives ""),
// start.sh with its perms; the other file functions' results are its
// meta. The files are read from the corpus directory, as the parser did.
var functionsFilesRun = corpusRun{
	prepare: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		cc.probe(corpusTask(t, job, "g", "t"), "hold", "/local/app.conf", "/local/start.sh")
	},
	check: func(t *testing.T, cc *corpusCluster, job *api.Job) {
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(corpusDir, "files", name))
			require.NoError(t, err)
			return string(b)
		}
		s := cc.waitAllocs(t, "files", 1, "running", nil)[0]
		rep := cc.reportOf(t, s.ID, "t", nil)
		tpl := read("app.conf.tpl")
		require.Contains(t, tpl, `{{ env "NOMAD_PORT_http" }}`)
		require.Equal(t, strings.Replace(tpl, `{{ env "NOMAD_PORT_http" }}`, "", 1), rep.Files["/local/app.conf"],
			"file(): the template, ${UPSTREAM} kept for the task")
		a, _, err := cc.c.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		fi, _, err := cc.c.AllocFS().Stat(a, "t/local/start.sh", nil)
		require.NoError(t, err)
		require.Equal(t, "-rwxr-xr-x", fi.FileMode, "perms = 0755")

		requireMeta(t, rep, job, "g", "t")
		admin, err := base64.StdEncoding.DecodeString(rep.Env["NOMAD_META_admin_b64"])
		require.NoError(t, err)
		require.Equal(t, read("admin.env"), string(admin), "filebase64")
		for k, v := range map[string]string{
			"motd": strings.TrimSpace(read("motd.txt")), "exists": "true", "missing": "false",
			"confs": "10-base.conf,20-extra.conf", "basename": "default.conf", "dirname": "/etc/nginx/conf.d",
			"abspath_abs": "true", "abspath_end": "motd.txt", "pathexpand": "/srv/data", "home_expand": "true",
		} {
			require.Equal(t, v, rep.Env["NOMAD_META_"+k], k)
		}
		escaped := strings.NewReplacer("${", "$${", "%{", "%%{").Replace(read("start.sh"))
		require.Equal(t, escaped+"\n", rep.Files["/local/start.sh"], "fileescaped(): the file with ${ and %{ escaped, as the parser returned it")
	},
}
