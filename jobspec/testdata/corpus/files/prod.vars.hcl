tag         = "2.0.1"
replicas    = 5
datacenters = ["prod-a", "prod-b", "prod-c"]
