// The rollout model: pure functions from API objects to cells, states and
// waves. No DOM here; rollout.js draws what this returns.

// States in legend order, with their fill colours and words.
export const STATES = [
  { key: 'waiting', label: 'waiting (older version)', color: '#c3cad5' },
  { key: 'prefetching', label: 'prefetching image', color: '#c4b5fd' },
  { key: 'pulling', label: 'pulling image', color: '#7c3aed' },
  { key: 'placed', label: 'placed', color: '#60a5fa' },
  { key: 'healthy', label: 'healthy', color: '#16a34a' },
  { key: 'unhealthy', label: 'unhealthy', color: '#dc2626' },
  { key: 'lost', label: 'lost', color: '#111827' },
];
export const CANARY_COLOR = '#d97706';
// Older versions than the newest old one are drawn darker, so that a
// fleet on three versions shows three greys.
export const OLD_SHADES = ['#c3cad5', '#9aa4b2', '#7b8594'];

const TERMINAL = new Set(['complete', 'failed', 'lost']);

// allocRow is the flat form of an allocation the model reads: what the
// rollout endpoint's rows hold, made here from a whole allocation (an
// event's payload).
export function allocRow(a) {
  let last = null;
  for (const ts of Object.values(a.TaskStates || {})) {
    for (const e of ts.Events || []) if (!last || e.Time > last.Time) last = e;
  }
  const ds = a.DeploymentStatus || {};
  return {
    ID: a.ID, NodeID: a.NodeID, NodeName: a.NodeName, JobVersion: a.JobVersion, ClientStatus: a.ClientStatus,
    DesiredStatus: a.DesiredStatus, Healthy: ds.Healthy === undefined ? null : ds.Healthy, Canary: !!ds.Canary,
    CreateIndex: a.CreateIndex, CreateTime: a.CreateTime, DeploymentID: a.DeploymentID || '',
    LastEvent: last ? (last.DisplayMessage || last.Message || '') : '', LastEventPhase: (last && last.Details && last.Details.phase) || '',
  };
}

// nodeRow is the flat form of a node.
export function nodeRow(n) {
  return { ID: n.ID, Name: n.Name, Status: n.Status, SchedulingEligibility: n.SchedulingEligibility, Datacenter: n.Datacenter, NodePool: n.NodePool };
}

// fromColumns turns the endpoint's array rows into objects.
export function fromColumns(columns, rows) {
  return (rows || []).map((r) => { const o = {}; columns.forEach((c, i) => { o[c] = r[i]; }); return o; });
}

function isPulling(a) {
  return a.LastEventPhase === 'prepare' || /^Pulling image|^Preparing task|^Downloading/.test(a.LastEvent || '');
}

function isPrefetching(a) {
  return /^Pulling image .* ahead of the wave/.test(a.LastEvent || '');
}

// pickAlloc chooses the allocation a node's cell shows: its newest live
// one, else its newest one.
function pickAlloc(list) {
  let live = null, any = null;
  for (const a of list) {
    if (!any || a.CreateIndex > any.CreateIndex) any = a;
    if (a.DesiredStatus === 'run' && !TERMINAL.has(a.ClientStatus) && (!live || a.CreateIndex > live.CreateIndex)) live = a;
  }
  return live || any;
}

// stateOf is a cell's state: what its allocation is doing for deployment d.
export function stateOf(alloc, node, d, ofDeployment) {
  if ((node && node.Status === 'down') || (alloc && alloc.ClientStatus === 'lost')) return 'lost';
  if (!alloc) return 'waiting';
  const current = !d || alloc.JobVersion === d.JobVersion;
  if (!ofDeployment && !current) {
    if (alloc.ClientStatus === 'failed') return 'unhealthy';
    return isPrefetching(alloc) ? 'prefetching' : 'waiting';
  }
  if (alloc.Healthy === false || alloc.ClientStatus === 'failed') return 'unhealthy';
  if (alloc.Healthy === true) return 'healthy';
  if (!ofDeployment && alloc.ClientStatus === 'running') return 'healthy';
  if (alloc.ClientStatus === 'complete') return 'healthy';
  if (alloc.ClientStatus === 'pending' && isPulling(alloc)) return 'pulling';
  return 'placed';
}

function dcMatches(patterns, dc) {
  return (patterns || ['*']).some((p) => p === '*' || p === dc ||
    (p.includes('*') && new RegExp('^' + p.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$').test(dc)));
}

// nodeCanRun says whether a node without an allocation of the job is one
// the system job would place on: ready, eligible, in its datacenters and
// node pool.
function nodeCanRun(job, node) {
  if (!job || (job.Type !== 'system' && job.Type !== 'sysbatch')) return false;
  if (node.Status !== 'ready' || node.SchedulingEligibility !== 'eligible') return false;
  const pool = job.NodePool || 'default';
  if (pool !== 'all' && (node.NodePool || 'default') !== pool) return false;
  return dcMatches(job.Datacenters, node.Datacenter);
}

// buildModel turns the job, its deployment (or null), its allocation rows
// (allocRow) and the node rows (null when the token may not read nodes)
// into cells grouped by wave.
//
// A wave is the set of the deployment's allocations created by one plan
// (the same CreateIndex); canaries form their own group. Nodes the
// deployment has not reached come last.
export function buildModel({ job, deployment: d, allocs, nodes }) {
  const byNode = new Map();
  for (const a of allocs || []) {
    if (!byNode.has(a.NodeID)) byNode.set(a.NodeID, []);
    byNode.get(a.NodeID).push(a);
  }
  const nodeByID = nodes instanceof Map ? nodes : new Map((nodes || []).map((n) => [n.ID, n]));
  const cells = [];
  for (const [nodeID, list] of byNode) {
    const c = cellFor({ job, deployment: d, nodeID, allocs: list, node: nodeByID.get(nodeID) });
    if (c) cells.push(c);
  }
  for (const n of nodeByID.values()) {
    if (!byNode.has(n.ID)) {
      const c = cellFor({ job, deployment: d, nodeID: n.ID, allocs: [], node: n });
      if (c) cells.push(c);
    }
  }
  const versions = [...new Set(cells.filter((c) => c.version !== null).map((c) => c.version))].sort((x, y) => y - x);
  const newVersion = d ? d.JobVersion : (job ? job.Version : versions[0]);
  const oldVersions = versions.filter((v) => v !== newVersion);
  const m = { cells, counts: null, canaries: 0, newVersion, oldVersions };
  for (const c of cells) c.shade = shadeOf(m, c);
  m.waves = groupWaves(cells, d);
  m.counts = Object.fromEntries(STATES.map((s) => [s.key, 0]));
  for (const c of cells) { m.counts[c.state]++; if (c.canary) m.canaries++; }
  return m;
}

// cellFor is one node's cell: its newest live allocation (else its newest)
// for deployment d, or, with no allocation, the node when the job would
// place on it; null when the node is not the job's. Nodes of finished
// allocations that nothing replaced (drained, job moved away) are not the
// job's any more.
export function cellFor({ job, deployment: d, nodeID, allocs, node }) {
  if (!allocs.length) return node && nodeCanRun(job, node) ? makeCell(null, node, nodeID, d, false) : null;
  const a = pickAlloc(allocs);
  const inDep = !!(d && a.DeploymentID === d.ID);
  if (a.DesiredStatus !== 'run' && !inDep && a.ClientStatus !== 'lost') return null;
  return makeCell(a, node, nodeID, d, inDep);
}

function shadeOf(m, c) {
  if (c.state === 'waiting' && c.version !== null && c.version !== m.newVersion) {
    return OLD_SHADES[Math.min(m.oldVersions.indexOf(c.version), OLD_SHADES.length - 1)];
  }
  return null;
}

// updateCell applies a node's new cell to model m in place when it keeps
// its place in the drawing (same wave, order and version set) and returns
// the cell to redraw; it returns null when the model must be rebuilt.
export function updateCell(m, old, next) {
  if (!old || !next) return null;
  if (old.inDeployment !== next.inDeployment || old.canary !== next.canary || old.createIndex !== next.createIndex ||
      old.nodeName !== next.nodeName) return null;
  if (next.version !== null && next.version !== m.newVersion && !m.oldVersions.includes(next.version)) return null;
  m.counts[old.state]--;
  m.counts[next.state]++;
  for (const k of ['allocID', 'version', 'state', 'createTime', 'clientStatus']) old[k] = next[k];
  old.shade = shadeOf(m, old);
  return old;
}

function makeCell(a, n, nodeID, d, ofDeployment) {
  return {
    nodeID,
    nodeName: (n && n.Name) || (a && a.NodeName) || nodeID.slice(0, 8),
    allocID: a ? a.ID : '',
    version: a ? a.JobVersion : null,
    state: stateOf(a, n, d, ofDeployment),
    canary: ofDeployment && !!a.Canary,
    inDeployment: ofDeployment,
    createIndex: a ? a.CreateIndex : 0,
    createTime: a ? a.CreateTime : 0,
    clientStatus: a ? a.ClientStatus : '',
  };
}

// MAX_GROUPS bounds the drawn groups: with more waves, neighbours merge.
export const MAX_GROUPS = 30;

// One collator for every sort: localeCompare with options builds one per
// call, which costs more than the rest of a 10,000-node update.
const collator = new Intl.Collator(undefined, { numeric: true });

function groupWaves(cells, d) {
  const byName = (x, y) => collator.compare(x.nodeName, y.nodeName);
  const canaries = cells.filter((c) => c.canary).sort(byName);
  const placed = cells.filter((c) => c.inDeployment && !c.canary);
  const rest = cells.filter((c) => !c.inDeployment).sort(byName);
  const byIndex = new Map();
  for (const c of placed) {
    if (!byIndex.has(c.createIndex)) byIndex.set(c.createIndex, []);
    byIndex.get(c.createIndex).push(c);
  }
  let waves = [...byIndex.entries()].sort((x, y) => x[0] - y[0])
    .map(([, list], i) => ({ label: `Wave ${i + 1}`, first: i + 1, last: i + 1, cells: list.sort(byName), time: list[0].createTime }));
  const room = MAX_GROUPS - 2;
  if (waves.length > room) {
    const per = Math.ceil(waves.length / room);
    const merged = [];
    for (let i = 0; i < waves.length; i += per) {
      const part = waves.slice(i, i + per);
      const first = part[0].first, last = part[part.length - 1].last;
      merged.push({ label: first === last ? `Wave ${first}` : `Waves ${first}–${last}`, first, last,
        cells: part.flatMap((w) => w.cells), time: part[0].time });
    }
    waves = merged;
  }
  const out = [];
  if (canaries.length) out.push({ label: 'Canaries', cells: canaries, time: canaries[0].createTime });
  out.push(...waves);
  if (rest.length) out.push({ label: d ? 'Not yet placed by this deployment' : 'Nodes', cells: rest, time: 0 });
  let i = 0;
  for (const g of out) for (const c of g.cells) { c.wave = g.label; c.order = i++; }
  return out;
}
