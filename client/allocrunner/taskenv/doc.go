// Package taskenv builds a task's environment (the NOMAD_* variables, the
// task's env block) and interpolates ${...} references in env values and in
// the string values of the driver config block. It is pure: Build takes the
// allocation, task, node and directories as data.
//
// Tasks of drivers that run on the host's filesystem (raw_exec, exec) start
// from the client's environment less its env.denylist (HostEnv,
// DefaultEnvDenylist, as in Nomad); everything below overrides it.
//
// Variables (host paths, since raw_exec tasks see the host; a driver that
// isolates the filesystem may override the directory variables):
//
//	NOMAD_ALLOC_ID NOMAD_SHORT_ALLOC_ID NOMAD_ALLOC_NAME NOMAD_ALLOC_INDEX
//	NOMAD_ALLOC_DIR NOMAD_TASK_DIR NOMAD_SECRETS_DIR
//	NOMAD_TASK_NAME NOMAD_GROUP_NAME NOMAD_JOB_NAME NOMAD_JOB_ID
//	NOMAD_JOB_PARENT_ID NOMAD_NAMESPACE NOMAD_REGION NOMAD_DC
//	NOMAD_CPU_LIMIT NOMAD_MEMORY_LIMIT NOMAD_MEMORY_MAX_LIMIT
//	NOMAD_IP_<label> NOMAD_HOST_IP_<label> NOMAD_PORT_<label> NOMAD_HOST_PORT_<label>
//	NOMAD_ADDR_<label> NOMAD_HOST_ADDR_<label>    from the group's ports
//	NOMAD_META_<key> NOMAD_META_<KEY>             job < group < task meta
//
// then the task's env block, whose values are interpolated first and which
// may override any of the above. Keys made from labels and meta keys have
// characters other than letters, digits and '_' replaced by '_'.
//
// Interpolation replaces ${NAME} when NAME is a variable of the environment
// or a node reference: ${attr.<attribute>}, ${meta.<node meta key>},
// ${node.unique.id}, ${node.unique.name}, ${node.datacenter},
// ${node.region}, ${node.class}, ${node.pool}. Unknown references are left
// as written, so a typo is visible in the task rather than silently empty.
//
// Importers: client (the env.denylist), client/allocrunner, its taskrunner
// and client/allocrunner/health (check addresses). It imports nomad/structs
// only.
package taskenv
