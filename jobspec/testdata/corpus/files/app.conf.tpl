listen {{ env "NOMAD_PORT_http" }}
upstream = "${UPSTREAM}"
