package jobspec

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds are valid jobspecs covering variables, locals, dynamic blocks,
// driver config, shorthands and runtime interpolation.
var fuzzSeeds = []string{
	`job "a" {}`,
	`variable "n" {
  type    = number
  default = 2
  validation {
    condition     = var.n > 0
    error_message = "positive"
  }
}
locals {
  name = "web-${var.n}"
  tags = [for i in range(var.n) : "t${i}"]
}
job "j" {
  type = "system"
  meta = { name = local.name }
  group "g" {
    count = var.n
    service {
      name = local.name
      tags = local.tags
    }
  }
}`,
	`locals {
  ports = { http = 0, admin = 9000 }
}
job "j" {
  dynamic "constraint" {
    for_each = ["linux"]
    content {
      attribute = "${attr.kernel.name}"
      value     = constraint.value
    }
  }
  group "g" {
    network {
      dynamic "port" {
        for_each = local.ports
        labels   = [port.key]
        content {
          static = port.value
        }
      }
    }
  }
}`,
	`job "j" {
  task "t" {
    driver = "docker"
    config {
      image = "nginx"
      args  = ["-p", 8080, "${NOMAD_PORT_http}"]
      mount {
        type = "bind"
      }
      dynamic "label" {
        for_each = { a = 1 }
        content {
          k = label.value
        }
      }
    }
    env = { ADDR = "${attr.unique.network.ip-address}" }
    kill_timeout = "5s"
  }
}`,
	`job "j" {
  constraint {
    distinct_property = "${meta.rack}"
    value = 2
  }
  affinity {
    attribute = "${node.class}"
    set_contains_any = "a,b"
    weight = -10
  }
  update {
    canary = 1
    max_parallel = 1
  }
}`,
}

// FuzzParse asserts that Parse never panics, whatever the input. It parses
// as the server's /v1/jobs/parse does (NoFS), the path that takes input
// from the network; with file access a fuzzer would read this machine's
// files and could ask bcrypt for days of work.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
	}
	seedFiles := []string{filepath.Join("testdata", "web.nomad.hcl"), filepath.Join("testdata", "cleanup.nomad.hcl")}
	corpus, _ := filepath.Glob(filepath.Join(corpusDir, "*.nomad.hcl"))
	for _, name := range append(seedFiles, corpus...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, false)
		}
	}
	f.Add([]byte(`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g"}]}}`), true)
	f.Fuzz(func(t *testing.T, src []byte, asJSON bool) {
		path := "fuzz.nomad.hcl"
		if asJSON {
			path = "fuzz.json"
		}
		job, err := Parse(path, src, Options{ArgVars: []string{"n=3"}, NoFS: true})
		if err == nil && job == nil {
			t.Fatal("nil job without error")
		}
	})
}
