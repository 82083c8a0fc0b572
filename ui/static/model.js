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

function lastEvent(alloc) {
  let last = null;
  for (const ts of Object.values(alloc.TaskStates || {})) {
    for (const e of ts.Events || []) if (!last || e.Time > last.Time) last = e;
  }
  return last;
}

function isPulling(alloc) {
  const e = lastEvent(alloc);
  if (!e) return false;
  const msg = e.DisplayMessage || e.Message || '';
  return (e.Details && e.Details.phase === 'prepare') || /^Pulling image|^Preparing task|^Downloading/.test(msg);
}

function isPrefetching(alloc) {
  const e = lastEvent(alloc);
  const msg = e ? (e.DisplayMessage || e.Message || '') : '';
  return /^Pulling image .* ahead of the wave/.test(msg);
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
  const ds = alloc.DeploymentStatus || {};
  const current = !d || alloc.JobVersion === d.JobVersion;
  if (!ofDeployment && !current) {
    if (alloc.ClientStatus === 'failed') return 'unhealthy';
    return isPrefetching(alloc) ? 'prefetching' : 'waiting';
  }
  if (ds.Healthy === false || alloc.ClientStatus === 'failed') return 'unhealthy';
  if (ds.Healthy === true) return 'healthy';
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

// buildModel turns the job, its deployment (or null), its allocation
// stubs, the IDs of the deployment's allocations (list stubs carry no
// deployment ID) and the node stubs into cells grouped by wave.
//
// A wave is the set of the deployment's allocations created by one plan
// (the same CreateIndex); canaries form their own group. Nodes the
// deployment has not reached come last.
export function buildModel({ job, deployment: d, allocs, deploymentAllocs, nodes }) {
  const inDep = (a) => !!(a && d && deploymentAllocs && deploymentAllocs.has(a.ID));
  const byNode = new Map();
  for (const a of allocs || []) {
    if (!byNode.has(a.NodeID)) byNode.set(a.NodeID, []);
    byNode.get(a.NodeID).push(a);
  }
  const nodeByID = new Map((nodes || []).map((n) => [n.ID, n]));
  const cells = [];
  const seen = new Set();
  for (const [nodeID, list] of byNode) {
    const a = pickAlloc(list);
    const n = nodeByID.get(nodeID);
    // Nodes of finished allocations that nothing replaced (drained, job
    // moved away) are not the job's any more.
    if (a.DesiredStatus !== 'run' && !inDep(a) && a.ClientStatus !== 'lost') continue;
    seen.add(nodeID);
    cells.push(makeCell(a, n, nodeID, d, inDep(a)));
  }
  for (const n of nodes || []) {
    if (!seen.has(n.ID) && nodeCanRun(job, n)) cells.push(makeCell(null, n, n.ID, d, false));
  }
  const versions = [...new Set(cells.filter((c) => c.version !== null).map((c) => c.version))].sort((x, y) => y - x);
  const newVersion = d ? d.JobVersion : (job ? job.Version : versions[0]);
  const oldVersions = versions.filter((v) => v !== newVersion);
  for (const c of cells) {
    c.shade = null;
    if (c.state === 'waiting' && c.version !== null && c.version !== newVersion) {
      c.shade = OLD_SHADES[Math.min(oldVersions.indexOf(c.version), OLD_SHADES.length - 1)];
    }
  }
  const waves = groupWaves(cells, d);
  const counts = Object.fromEntries(STATES.map((s) => [s.key, 0]));
  let canaries = 0;
  for (const c of cells) { counts[c.state]++; if (c.canary) canaries++; }
  return { cells, waves, counts, canaries, newVersion, oldVersions };
}

function makeCell(a, n, nodeID, d, ofDeployment) {
  const ds = (a && a.DeploymentStatus) || {};
  return {
    nodeID,
    nodeName: (n && n.Name) || (a && a.NodeName) || nodeID.slice(0, 8),
    allocID: a ? a.ID : '',
    version: a ? a.JobVersion : null,
    state: stateOf(a, n, d, ofDeployment),
    canary: ofDeployment && !!ds.Canary,
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
