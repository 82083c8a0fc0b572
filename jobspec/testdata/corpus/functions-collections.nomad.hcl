locals {
  nodes   = ["n3", "n1", "n2", "n1"]
  weights = { small = 1, medium = 2, large = 4 }
}

job "collections" {
  datacenters = sort(distinct(local.nodes))

  meta {
    chunklist       = jsonencode(chunklist(["a", "b", "c", "d", "e"], 2))
    coalesce        = coalesce("", "fallback")
    coalescelist    = jsonencode(coalescelist([], ["x"]))
    compact         = jsonencode(compact(["a", "", "b"]))
    concat          = jsonencode(concat(["a"], ["b", "c"]))
    contains        = contains(local.nodes, "n2")
    element         = element(["a", "b", "c"], 4)
    flatten         = jsonencode(flatten([["a", "b"], [], ["c"]]))
    index           = index(["a", "b", "c"], 1)
    index_map       = index(local.weights, "large")
    keys            = jsonencode(keys(local.weights))
    length          = length(local.nodes)
    lookup          = lookup(local.weights, "huge", 0)
    merge           = jsonencode(merge({ a = 1 }, { b = 2 }, { a = 3 }))
    range           = jsonencode(range(1, 8, 3))
    reverse         = jsonencode(reverse(["a", "b", "c"]))
    setintersection = jsonencode(setintersection(["a", "b"], ["b", "c"]))
    setproduct      = jsonencode(setproduct(["x"], ["1", "2"]))
    setsubtract     = jsonencode(setsubtract(["a", "b", "c"], ["b"]))
    setunion        = jsonencode(setunion(["b"], ["a"]))
    slice           = jsonencode(slice(["a", "b", "c", "d"], 1, 3))
    values          = jsonencode(values(local.weights))
    zipmap          = jsonencode(zipmap(["k1", "k2"], ["v1", "v2"]))
    for_expr        = join(",", [for n in distinct(local.nodes) : upper(n) if n != "n3"])
    splat           = join(",", [{ id = "a" }, { id = "b" }][*].id)
  }

  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "busybox:1.36"
      }
    }
  }
}
