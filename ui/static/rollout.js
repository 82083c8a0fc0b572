// The rollout view: the deployment panel, its actions, and every node of
// the job drawn on one canvas by wave. The first picture comes from one
// read (/v1/job/<id>/rollout); then the page's event stream brings the
// changed allocations, nodes, deployments and job, and only the cells that
// changed are redrawn (a new wave or deployment redraws the grid). When
// the stream cannot be had, a blocking query on the same read keeps the
// view live.
import { get, put, watch, eventStream, APIError } from './api.js';
import { STATES, CANARY_COLOR, buildModel, cellFor, updateCell, allocRow, nodeRow, fromColumns } from './model.js';
import { el, text, fmtTime, fmtRelative, runAction, shortID, imagesOf, jobPath, flash } from './util.js';

const COLORS = Object.fromEntries(STATES.map((s) => [s.key, s.color]));
const LABELS = Object.fromEntries(STATES.map((s) => [s.key, s.label]));

export function startRollout(body) {
  const jobID = body.dataset.job, ns = body.dataset.namespace || 'default';
  const pinned = body.dataset.deployment; // ?deployment=<id> shows that one
  const q = '?namespace=' + encodeURIComponent(ns);
  const jp = jobPath(jobID);
  // The server names the read in the page (boot.js has begun it).
  const viewPath = (window.droverFirstRead && window.droverFirstRead.path) || (jp + '/rollout' + q + (pinned ? '&deployment=' + encodeURIComponent(pinned) : ''));
  // allocs: ID -> row; byNode: node ID -> Set of allocation IDs; nodes:
  // ID -> row, or null when the token may not read nodes.
  const s = { job: null, deployment: null, gates: null, allocs: new Map(), byNode: new Map(), nodes: null, versions: null, model: null };
  const view = new GridView(document.getElementById('grid'), document.getElementById('grid-tip'));
  const debug = { renders: 0, cellUpdates: 0, drawnAt: 0, deployment: null, lastDrawMs: 0, history: [], live: 'loading' };
  Object.defineProperty(debug, 'cells', { get: () => (s.model ? s.model.cells : []).map((c) => ({ node: c.nodeID, name: c.nodeName,
    alloc: c.allocID, version: c.version, state: c.state, canary: c.canary, wave: c.wave })) });
  window.droverRollout = debug;
  let frame = 0, full = true;
  const dirty = new Set(); // nodes whose cells may have changed
  const schedule = (rebuild) => { if (rebuild) full = true; if (!frame) frame = requestAnimationFrame(render); };

  // The stream's deployments carry no gate records (a Drover extension):
  // a gated job's view reads them again when its deployment changes.
  const gated = () => !!s.gates || ((s.job && s.job.TaskGroups) || []).some((tg) =>
    tg.Meta && (tg.Meta['drover.analysis_query'] || tg.Meta['drover.gate_webhook']));
  const refreshGates = (id) => get('/v1/deployment/gates/' + encodeURIComponent(id) + q).then((g) => {
    if (s.deployment && s.deployment.ID === g.DeploymentID) { s.gates = g.Gates || null; schedule(false); }
  }).catch((err) => flash('Cannot read the deployment gates: ' + err.message));

  const refreshVersions = () => get(jp + '/versions' + q).then((v) => { s.versions = v.Versions || []; schedule(false); })
    .catch((err) => flash('Cannot read the job versions: ' + err.message));

  // addAlloc keeps, as the rollout read does, a node's allocations that
  // run or are meant to, and its newest: the history of past rollouts is
  // dropped as new allocations replace it.
  const addAlloc = (row) => {
    const old = s.allocs.get(row.ID);
    if (old && old.NodeID !== row.NodeID) s.byNode.get(old.NodeID)?.delete(row.ID);
    s.allocs.set(row.ID, row);
    if (!s.byNode.has(row.NodeID)) s.byNode.set(row.NodeID, new Set());
    const ids = s.byNode.get(row.NodeID);
    ids.add(row.ID);
    if (ids.size > 2) {
      const list = [...ids].map((id) => s.allocs.get(id));
      const newest = list.reduce((x, y) => (y.CreateIndex > x.CreateIndex ? y : x));
      for (const a of list) {
        const live = a.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(a.ClientStatus);
        if (a !== newest && !live) { ids.delete(a.ID); s.allocs.delete(a.ID); }
      }
    }
    dirty.add(row.NodeID);
  };

  // load takes the whole picture from the rollout read.
  const load = (v) => {
    s.job = v.Job;
    s.deployment = v.Deployment || null;
    s.gates = v.Gates || null;
    s.allocs = new Map(); s.byNode = new Map();
    for (const row of fromColumns(v.AllocColumns, v.Allocs)) addAlloc(row);
    s.nodes = v.Nodes ? new Map(fromColumns(v.NodeColumns, v.Nodes).map((n) => [n.ID, n])) : null;
    schedule(true);
  };

  // apply takes one batch of the stream's events.
  const apply = (batch) => {
    for (const e of batch.Events) {
      const p = e.Payload || {};
      if (e.Topic === 'Allocation' && p.Allocation && p.Allocation.JobID === jobID && p.Allocation.Namespace === ns) {
        addAlloc(allocRow(p.Allocation));
      } else if (e.Topic === 'Node' && p.Node && s.nodes) {
        if (e.Type === 'NodeDeregistration') s.nodes.delete(p.Node.ID); else s.nodes.set(p.Node.ID, nodeRow(p.Node));
        dirty.add(p.Node.ID);
      } else if (e.Topic === 'Deployment' && p.Deployment && p.Deployment.JobID === jobID && p.Deployment.Namespace === ns) {
        const d = p.Deployment, cur = s.deployment;
        if (pinned ? d.ID === pinned : (!cur || d.ID === cur.ID || d.CreateIndex > cur.CreateIndex)) {
          s.deployment = d;
          if (!cur || cur.ID !== d.ID) full = true;
          // A deployment's end makes its version stable (or not), which
          // the revert button reads.
          if (!cur || cur.ID !== d.ID || cur.Status !== d.Status) refreshVersions();
          if (!cur || cur.ID !== d.ID) s.gates = null;
          if (gated()) refreshGates(d.ID);
        }
      } else if (e.Topic === 'Job' && p.Job && p.Job.ID === jobID && p.Job.Namespace === ns && !p.Deleted) {
        s.job = p.Job;
        full = true;
        refreshVersions();
      }
    }
    schedule(false);
  };

  // follow keeps the view on the stream; when the stream is refused or
  // breaks three times running, a blocking query on the read takes over.
  const follow = async (index) => {
    let failures = 0;
    for (;;) {
      let opened = false;
      try {
        await eventStream(['Job:' + jobID, 'Deployment:' + jobID, 'Allocation:' + jobID, ...(s.nodes ? ['Node'] : [])], index + 1, (b) => {
          index = b.Index; failures = 0; apply(b);
        }, { namespace: ns, onOpen: () => { opened = true; debug.live = window.droverLive = 'stream'; } });
      } catch (err) {
        if (!opened && err instanceof APIError) failures = 3;
      }
      if (++failures >= 3) break;
      // The stream ended (the agent restarted, or this page fell behind):
      // read the whole picture again and go on from there.
      await new Promise((res) => setTimeout(res, 500 * failures));
      try {
        const r = await getIndexed(viewPath);
        load(r.data); index = r.index;
      } catch (err) {
        flash('Cannot read the rollout: ' + err.message);
      }
    }
    debug.live = window.droverLive = 'blocking';
    watch(viewPath, (v) => load(v), { onError });
  };

  const getIndexed = (path) => get(path, { indexed: true });
  // A first read that fails (no such job yet, the agent away) is retried
  // by a blocking query on it, which then keeps the view live.
  const onError = (err) => flash('Cannot read the rollout: ' + err.message);
  getIndexed(viewPath).then((r) => { load(r.data); follow(r.index); })
    .catch((err) => { onError(err); debug.live = window.droverLive = 'blocking'; watch(viewPath, (v) => load(v), { onError }); });
  refreshVersions();

  function render() {
    frame = 0;
    if (!s.job) return;
    const t0 = performance.now();
    const d = s.deployment;
    if (!full && s.model) {
      // Only the changed nodes: each cell redrawn where it is, unless one
      // moves (a new wave, a node joining), which redraws the grid.
      const changed = [];
      for (const nodeID of dirty) {
        const old = s.model.byNode.get(nodeID);
        const next = cellFor({ job: s.job, deployment: d, nodeID, allocs: [...(s.byNode.get(nodeID) || [])].map((id) => s.allocs.get(id)),
          node: s.nodes ? s.nodes.get(nodeID) : null });
        if (!old && !next) continue;
        const c = updateCell(s.model, old, next);
        if (!c) { full = true; break; }
        changed.push(c);
      }
      if (!full) {
        for (const c of changed) view.drawOne(c);
        debug.cellUpdates += changed.length;
      }
    }
    dirty.clear();
    if (full || !s.model) {
      full = false;
      s.model = buildModel({ job: s.job, deployment: d, allocs: s.allocs.values(), nodes: s.nodes || [] });
      s.model.byNode = new Map(s.model.cells.map((c) => [c.nodeID, c]));
      view.set(s.model);
      debug.renders++;
    }
    renderPanel(s, d);
    renderLegend(s.model);
    debug.deployment = d ? { id: d.ID, status: d.Status, version: d.JobVersion } : null;
    // What was drawn, one line per distinct picture: "v2 running: v2 unhealthy ×1, v1 waiting ×3".
    const seen = {};
    for (const c of s.model.cells) { const k = `v${c.version} ${c.state}`; seen[k] = (seen[k] || 0) + 1; }
    const line = (d ? `v${d.JobVersion} ${d.Status}: ` : '') + Object.entries(seen).sort().map(([k, n]) => `${k} ×${n}`).join(', ');
    if (debug.history.at(-1) !== line) debug.history.push(line);
    debug.lastDrawMs = performance.now() - t0;
    if (!debug.drawnAt) {
      debug.drawnAt = performance.now(); // from navigation start
      performance.mark('rollout-drawn');
    }
    body.dataset.drawn = 'true';
  }

  function act(id, fn) {
    document.getElementById(id).addEventListener('click', (ev) => runAction(ev.currentTarget, fn));
  }
  act('act-promote', () => put('/v1/deployment/promote/' + s.deployment.ID, { DeploymentID: s.deployment.ID, All: true }));
  act('act-pause', () => put('/v1/deployment/pause/' + s.deployment.ID, { DeploymentID: s.deployment.ID, Pause: true }));
  act('act-resume', () => put('/v1/deployment/pause/' + s.deployment.ID, { DeploymentID: s.deployment.ID, Pause: false }));
  act('act-fail', () => put('/v1/deployment/fail/' + s.deployment.ID, { DeploymentID: s.deployment.ID }));
  act('act-revert', () => {
    const v = revertTarget(s);
    return put(jp + '/revert' + q, { JobID: jobID, JobVersion: v, EnforcePriorVersion: null });
  });

  view.onOpen = (c) => { if (c.allocID) location.href = '/ui/allocations/' + c.allocID; };
  view.onFocusText = (t) => text(document.getElementById('grid-focus'), t);
  // Expose for measuring: draw n synthetic cells and return the time taken.
  debug.benchmark = (n) => view.benchmark(n);
  // benchmarkModel times the costliest live update at fleet scale, a
  // new wave: the model built from n synthetic nodes and allocations
  // (waves of 500, canaries, every state) and drawn; the real view comes
  // back on the next frame.
  debug.benchmarkModel = (n) => {
    const { d, allocs, nodes } = benchData(n);
    const t0 = performance.now();
    view.set(buildModel({ job: s.job, deployment: d, allocs, nodes }));
    const ms = performance.now() - t0;
    schedule(true);
    return ms;
  };
  // benchmarkCells times the common live update at fleet scale: k of n
  // nodes' allocations turning healthy, applied and redrawn cell by cell.
  debug.benchmarkCells = (n, k) => {
    const { d, allocs, nodes } = benchData(n);
    const m = buildModel({ job: s.job, deployment: d, allocs, nodes });
    view.set(m);
    const byNode = new Map(m.cells.map((c) => [c.nodeID, c]));
    const changed = allocs.filter((a) => a.DeploymentID && a.Healthy !== true).slice(0, k).map((a) => ({ ...a, Healthy: true, ClientStatus: 'running' }));
    const t0 = performance.now();
    let redrawn = 0;
    for (const a of changed) {
      const c = updateCell(m, byNode.get(a.NodeID), cellFor({ job: s.job, deployment: d, nodeID: a.NodeID, allocs: [a], node: null }));
      if (c) { view.drawOne(c); redrawn++; }
    }
    const ms = performance.now() - t0;
    schedule(true);
    return redrawn === changed.length ? ms : -1;
  };
}

// benchData is n synthetic nodes and their allocations: half of them
// placed by deployment "bench" in waves of 500, every state among them.
function benchData(n) {
  const d = { ID: 'bench', JobVersion: 2, Status: 'running', TaskGroups: {} };
  const nodes = [], allocs = [];
  for (let i = 0; i < n; i++) {
    const id = 'node-' + i;
    nodes.push({ ID: id, Name: 'sim-' + i, Status: i % 211 === 0 ? 'down' : 'ready', SchedulingEligibility: 'eligible', Datacenter: 'dc1', NodePool: 'default' });
    const placed = i < n / 2;
    allocs.push({ ID: 'alloc-' + i, NodeID: id, NodeName: 'sim-' + i, JobVersion: placed ? 2 : 1, DesiredStatus: 'run',
      CreateIndex: placed ? 1000 + Math.floor(i / 500) : 10, CreateTime: 0, ClientStatus: i % 7 === 0 ? 'pending' : 'running',
      Healthy: placed ? (i % 13 === 0 ? false : i % 3 === 0 ? null : true) : null, Canary: placed && i < 20,
      DeploymentID: placed ? 'bench' : '', LastEvent: '', LastEventPhase: '' });
  }
  return { d, allocs, nodes };
}

// revertTarget is the newest stable version older than the job's current
// one, else the version before it.
function revertTarget(s) {
  const cur = s.job.Version;
  const stable = (s.versions || []).filter((v) => v.Stable && v.Version < cur).sort((a, b) => b.Version - a.Version);
  return stable.length ? stable[0].Version : Math.max(cur - 1, 0);
}

function renderPanel(s, d) {
  const status = document.getElementById('dep-status');
  const st = d ? d.Status : 'no deployment';
  status.textContent = st;
  status.dataset.status = st;
  text(document.getElementById('dep-description'), d ? d.StatusDescription : 'This job has no deployment: its allocations were placed all at once.');
  const facts = document.getElementById('dep-facts');
  facts.replaceChildren();
  const fact = (k, v) => facts.append(el('div', {}, el('dt', {}, k), el('dd', {}, v)));
  const m = s.model;
  if (d) {
    fact('Deployment', el('span', { class: 'mono', title: d.ID }, shortID(d.ID)));
    fact('Version', 'v' + d.JobVersion);
  }
  fact('Nodes', String(m.cells.length));
  fact('Healthy', `${m.counts.healthy} of ${m.cells.length}`);
  if (m.oldVersions.length) fact('Older versions', m.oldVersions.map((v) => 'v' + v).join(', '));
  const deadlines = d ? Object.values(d.TaskGroups || {}).map((g) => g.RequireProgressBy).filter((t) => t && !t.startsWith('0001')) : [];
  if (deadlines.length && (d.Status === 'running' || d.Status === 'paused')) fact('Progress deadline', fmtRelative(deadlines.sort()[0]));

  const active = d && (d.Status === 'running' || d.Status === 'paused' || d.Status === 'pending' || d.Status === 'initializing' || d.Status === 'blocked');
  const tbody = document.querySelector('#dep-groups tbody');
  tbody.replaceChildren(...Object.entries((d && d.TaskGroups) || {}).sort().map(([name, g]) => el('tr', {},
    el('td', {}, name), el('td', {}, String(g.DesiredTotal)),
    el('td', {}, g.DesiredCanaries ? `${(g.PlacedCanaries || []).length} / ${g.DesiredCanaries}` : '–'),
    el('td', {}, String(g.PlacedAllocs)), el('td', {}, String(g.HealthyAllocs)), el('td', {}, String(g.UnhealthyAllocs)),
    el('td', {}, g.DesiredCanaries ? (g.Promoted ? 'yes' : 'no') : '–'),
    el('td', {}, active && g.RequireProgressBy && !g.RequireProgressBy.startsWith('0001') ? fmtTime(g.RequireProgressBy) : '–'))));

  const needsPromotion = active && Object.values(d.TaskGroups || {}).some((g) => g.DesiredCanaries > 0 && !g.Promoted);
  show('act-promote', needsPromotion);
  show('act-pause', active && d.Status !== 'paused');
  show('act-resume', active && d.Status === 'paused');
  show('act-fail', active);
  const canRevert = s.job && s.job.Version > 0;
  show('act-revert', canRevert);
  if (canRevert) document.getElementById('act-revert').textContent = 'Revert to v' + revertTarget(s);
  renderImage(s, d);
  renderRules(s, d);
}

// RULES says in words what each drover.* group meta key of a rollout does
// (README: "Drover's rollout keys"); a key not listed is shown as written.
const RULES = {
  'drover.canary_count': 'canary nodes',
  'drover.canary_selector': 'canaries only on nodes matching',
  'drover.canary_spread': 'canaries spread over distinct values of',
  'drover.max_parallel': 'nodes per wave',
  'drover.partition': 'nodes kept on older versions',
  'drover.auto_pause_on': 'pause when',
  'drover.auto_fail_on': 'fail when',
  'drover.surge': 'new allocation beside the old one:',
  'drover.analysis_query': 'metric gate query',
  'drover.analysis_condition': 'metric gate passes when the value is',
  'drover.analysis_interval': 'metric gate asked every',
  'drover.analysis_failure_limit': 'metric gate failures allowed:',
  'drover.gate_webhook': 'webhook gate',
};

// renderRules lists the drover.* rollout keys of the version going out,
// group by group, and the nodes its canaries are on with their
// datacenters; the box is hidden when there is neither. Why a deployment
// paused or failed (a signal, a gate) is its status description, above.
function renderRules(s, d) {
  const box = document.getElementById('dep-rules');
  const v = d ? d.JobVersion : s.job.Version;
  const spec = (s.versions || []).find((x) => x.Version === v) || s.job;
  const rows = [];
  for (const tg of (spec && spec.TaskGroups) || []) {
    for (const [k, val] of Object.entries(tg.Meta || {}).filter(([k]) => k.startsWith('drover.')).sort()) {
      rows.push(el('div', { class: 'rule', 'data-key': k }, el('strong', {}, tg.Name + ': '),
        RULES[k] ? el('span', {}, `${RULES[k]} `) : el('span', {}, `${k} = `), el('code', {}, val)));
    }
  }
  for (const [group, g] of Object.entries((d && s.gates) || {}).sort()) rows.push(gateRow(group, g));
  const canaries = d ? s.model.cells.filter((c) => c.canary && c.version === v) : [];
  if (canaries.length) {
    const dc = (c) => { const n = s.nodes && s.nodes.get(c.nodeID); return n && n.Datacenter ? ` (${n.Datacenter})` : ''; };
    const names = canaries.map((c) => c.nodeName + dc(c)).sort();
    rows.push(el('div', { id: 'dep-canary-nodes' }, el('strong', {}, `Canar${names.length > 1 ? 'ies' : 'y'} on: `), names.join(', ')));
  }
  box.hidden = rows.length === 0;
  box.replaceChildren(el('div', { class: 'small muted' }, `Rollout rules of v${v}`), ...rows);
}

// gateRow says where a group's metric and webhook gates stand: what the
// group waits for, the last answer and why, the metric evaluations, and
// which gate paused the deployment.
function gateRow(group, g) {
  const parts = [g.Checkpoint ? `waiting for ${g.Checkpoint}` : 'waiting for nothing'];
  if (g.Gate) parts.push(`last ${g.Gate} answer: ${g.Result}${g.Reason ? ` (${g.Reason})` : ''}`);
  if (g.Evaluations) parts.push(`${g.Evaluations} metric evaluation${g.Evaluations > 1 ? 's' : ''}, ${g.Failures} failed`);
  if (g.PausedBy) parts.push(`paused by the ${g.PausedBy} gate`);
  return el('div', { class: 'gate', 'data-group': group }, el('strong', {}, `${group} gates: `), parts.join('; '));
}

function show(id, on) { document.getElementById(id).hidden = !on; }

// renderImage names the images going out: the deployment's version against
// the version before it, and the version tag that says why.
function renderImage(s, d) {
  const box = document.getElementById('dep-image');
  const versions = s.versions || [];
  const v = d ? d.JobVersion : s.job.Version;
  const cur = versions.find((x) => x.Version === v);
  const prev = versions.filter((x) => x.Version < v).sort((a, b) => b.Version - a.Version)[0];
  if (!cur) { box.hidden = true; return; }
  const now = imagesOf(cur), before = prev ? imagesOf(prev) : {};
  const rows = [];
  for (const [task, img] of Object.entries(now)) {
    const line = el('div', {}, el('strong', {}, task + ': '), el('code', {}, img));
    if (before[task] && before[task] !== img) line.append(el('span', { class: 'muted' }, ' (was '), el('code', { class: 'muted' }, before[task]), el('span', { class: 'muted' }, ')'));
    rows.push(line);
  }
  if (cur.VersionTag && (cur.VersionTag.Name || cur.VersionTag.Description)) {
    rows.push(el('div', { class: 'muted' }, `v${v} tag ${cur.VersionTag.Name || ''}: ${cur.VersionTag.Description || ''}`));
  }
  box.hidden = rows.length === 0;
  box.replaceChildren(el('div', { class: 'small muted' }, `Image${rows.length > 1 ? 's' : ''} going out with v${v}`), ...rows);
}

function renderLegend(m) {
  const ul = document.getElementById('legend');
  const swatch = (color) => { const sw = el('span', { class: 'sw', 'aria-hidden': 'true' }); sw.style.background = color; return sw; };
  const items = STATES.map((st) => el('li', {}, swatch(st.color), st.label, el('span', { class: 'n' }, String(m.counts[st.key]))));
  items.push(el('li', {}, el('span', { class: 'sw canary', 'aria-hidden': 'true' }), 'canary', el('span', { class: 'n' }, String(m.canaries))));
  if (m.oldVersions.length > 1) items.push(el('li', { class: 'muted' }, `older versions darker: ${m.oldVersions.map((v) => 'v' + v).join(', ')}`));
  ul.replaceChildren(...items);
}

// GridView draws cells in groups on a canvas and maps pointer and keyboard
// positions back to cells.
class GridView {
  constructor(canvas, tip) {
    this.canvas = canvas; this.tip = tip; this.model = null; this.layout = []; this.focus = -1;
    this.onOpen = () => {}; this.onFocusText = () => {};
    new ResizeObserver(() => this.draw()).observe(canvas.parentElement);
    canvas.addEventListener('mousemove', (e) => this.hover(e));
    canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    canvas.addEventListener('click', (e) => { const c = this.at(e); if (c) this.onOpen(c); });
    canvas.addEventListener('keydown', (e) => this.key(e));
    canvas.addEventListener('focus', () => { if (this.focus < 0 && this.cells().length) this.setFocus(0); });
  }

  cells() { return this.model ? this.model.waves.flatMap((w) => w.cells) : []; }

  set(model) { this.model = model; this.draw(); }

  // geometry picks the cell size from the count: big cells for a few
  // nodes, small ones for thousands.
  geometry(n, width) {
    const size = n <= 100 ? 22 : n <= 600 ? 16 : n <= 2500 ? 11 : n <= 6000 ? 8 : 6;
    const gap = size >= 11 ? 3 : 1;
    const pitch = size + gap;
    const cols = Math.max(1, Math.floor((width + gap) / pitch));
    return { size, gap, pitch, cols };
  }

  draw() {
    if (!this.model) return;
    const canvas = this.canvas;
    const width = canvas.parentElement.clientWidth - 20;
    const cells = this.cells();
    const g = this.geometry(cells.length, width);
    const label = 22;
    let y = 0;
    this.layout = [];
    for (const w of this.model.waves) {
      const rows = Math.ceil(w.cells.length / g.cols);
      this.layout.push({ wave: w, top: y + label, rows });
      y += label + rows * g.pitch + 8;
    }
    const dpr = window.devicePixelRatio || 1;
    const height = Math.max(y, 40);
    canvas.style.height = height + 'px';
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(height * dpr);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    this.g = g;
    ctx.font = '600 13px system-ui, sans-serif';
    ctx.textBaseline = 'alphabetic';
    for (const L of this.layout) {
      const w = L.wave;
      ctx.fillStyle = '#1a1f29';
      const head = `${w.label} · ${w.cells.length} node${w.cells.length === 1 ? '' : 's'}`;
      ctx.fillText(head, 0, L.top - 7);
      if (w.time) {
        const hw = ctx.measureText(head).width;
        ctx.fillStyle = '#525c6b'; ctx.font = '13px system-ui, sans-serif';
        ctx.fillText('  placed ' + fmtTime(w.time / 1e6), hw, L.top - 7);
        ctx.font = '600 13px system-ui, sans-serif';
      }
      w.cells.forEach((c, i) => {
        c.x = (i % g.cols) * g.pitch; c.y = L.top + Math.floor(i / g.cols) * g.pitch;
        this.drawCell(ctx, c, c.y, c.x);
      });
    }
    const f = this.focus >= 0 ? cells[this.focus] : null;
    if (f && document.activeElement === canvas) {
      const p = this.pos(f);
      ctx.strokeStyle = '#f59e0b'; ctx.lineWidth = 2;
      ctx.strokeRect(p.x - 2, p.y - 2, g.size + 4, g.size + 4);
    }
  }

  // drawOne redraws one cell where the last draw put it.
  drawOne(c) {
    if (!this.g || c.x === undefined) return;
    const ctx = this.canvas.getContext('2d');
    ctx.clearRect(c.x, c.y, this.g.size, this.g.size);
    this.drawCell(ctx, c, c.y, c.x);
  }

  drawCell(ctx, c, y, x) {
    const s = this.g.size;
    ctx.fillStyle = c.shade || COLORS[c.state];
    ctx.fillRect(x, y, s, s);
    if (c.canary) {
      const b = s >= 11 ? 3 : 2;
      ctx.strokeStyle = CANARY_COLOR; ctx.lineWidth = b;
      ctx.strokeRect(x + b / 2, y + b / 2, s - b, s - b);
    }
  }

  pos(c) {
    for (const L of this.layout) {
      const i = L.wave.cells.indexOf(c);
      if (i >= 0) return { x: (i % this.g.cols) * this.g.pitch, y: L.top + Math.floor(i / this.g.cols) * this.g.pitch };
    }
    return { x: 0, y: 0 };
  }

  at(e) {
    if (!this.g) return null;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    for (const L of this.layout) {
      if (y < L.top || y >= L.top + L.rows * this.g.pitch) continue;
      const col = Math.floor(x / this.g.pitch), row = Math.floor((y - L.top) / this.g.pitch);
      if (col >= this.g.cols || x % this.g.pitch > this.g.size || (y - L.top) % this.g.pitch > this.g.size) return null;
      return L.wave.cells[row * this.g.cols + col] || null;
    }
    return null;
  }

  describe(c) {
    return `${c.nodeName}: ${c.version === null ? 'no allocation' : 'v' + c.version}, ${LABELS[c.state]}${c.canary ? ', canary' : ''} (${c.wave})`;
  }

  hover(e) {
    const c = this.at(e);
    this.canvas.style.cursor = c && c.allocID ? 'pointer' : 'default';
    if (!c) { this.tip.hidden = true; return; }
    this.tip.textContent = this.describe(c) + (c.allocID ? ` · alloc ${shortID(c.allocID)}` : '');
    const wrap = this.canvas.parentElement.getBoundingClientRect();
    this.tip.style.left = Math.min(e.clientX - wrap.left + 12, wrap.width - 240) + 'px';
    this.tip.style.top = (e.clientY - wrap.top + 14) + 'px';
    this.tip.hidden = false;
  }

  setFocus(i) {
    const cells = this.cells();
    if (!cells.length) return;
    this.focus = Math.max(0, Math.min(i, cells.length - 1));
    this.onFocusText(this.describe(cells[this.focus]));
    this.draw();
  }

  key(e) {
    const cols = this.g ? this.g.cols : 1;
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols, Home: -Infinity, End: Infinity };
    if (e.key in moves) {
      e.preventDefault();
      const n = this.cells().length;
      const d = moves[e.key];
      this.setFocus(d === -Infinity ? 0 : d === Infinity ? n - 1 : this.focus + d);
    } else if (e.key === 'Enter' && this.focus >= 0) {
      this.onOpen(this.cells()[this.focus]);
    }
  }

  // benchmark draws n synthetic cells (every state, some canaries, in waves
  // of 500) and restores the real model; it returns the draw time in ms.
  benchmark(n) {
    const real = this.model;
    const cells = Array.from({ length: n }, (_, i) => ({ nodeID: 'n' + i, nodeName: 'node-' + i, allocID: '', version: 1,
      state: STATES[i % STATES.length].key, canary: i % 97 === 0, shade: null }));
    const waves = [];
    for (let i = 0; i < n; i += 500) waves.push({ label: `Wave ${waves.length + 1}`, cells: cells.slice(i, i + 500), time: 0 });
    this.model = { waves };
    const t0 = performance.now();
    this.draw();
    const ms = performance.now() - t0;
    this.model = real;
    this.draw();
    return ms;
  }
}
