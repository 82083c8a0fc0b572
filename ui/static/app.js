// Entry point: wires the token button and starts the page named by
// <body data-page>.
import { askToken, get, put, watch, follow } from './api.js';
import { startRollout } from './rollout.js';
import { el, text, shortID, badge, fmtTime, runAction, healthOf, allocLink, nodeLink, jobLink, emptyRow, flash, jobPath } from './util.js';

const body = document.body;
document.getElementById('token-button').addEventListener('click', () => askToken());

const onError = (err) => flash('Cannot read from the cluster: ' + err.message);

function jobsPage() {
  let jobs = null, deps = null;
  const details = new Map(); // job key -> {modify, job}
  const tbody = document.querySelector('#jobs-table tbody');
  const draw = () => {
    if (!jobs || !deps) return;
    if (!jobs.length) { tbody.replaceChildren(emptyRow(6, 'No jobs yet. Run one with `drover job run <file>`.')); return; }
    const latest = new Map();
    for (const d of deps) {
      const k = d.Namespace + '/' + d.JobID;
      if (!latest.has(k) || latest.get(k).CreateIndex < d.CreateIndex) latest.set(k, d);
    }
    tbody.replaceChildren(...jobs.map((j) => {
      const k = j.Namespace + '/' + j.ID;
      const d = latest.get(k);
      const full = details.get(k);
      const groups = j.JobSummary ? Object.keys(j.JobSummary.Summary || {}).length : '';
      return el('tr', { 'data-job': j.ID },
        el('td', {}, jobLink(j.ID, j.Namespace)),
        el('td', {}, j.Type),
        el('td', {}, badge(j.Status)),
        el('td', {}, full && full.job ? 'v' + full.job.Version : '…'),
        el('td', {}, String(groups)),
        el('td', {}, d ? [badge(d.Status), ' v' + d.JobVersion + ' ',
          el('a', { href: '/ui/jobs/' + encodeURIComponent(j.ID) + '@' + encodeURIComponent(j.Namespace) + '/rollout' }, 'rollout')] : el('span', { class: 'muted' }, 'none')));
    }));
  };
  watch('/v1/jobs?namespace=*', (list) => {
    jobs = (list || []).sort((a, b) => a.ID.localeCompare(b.ID));
    for (const j of jobs) {
      const k = j.Namespace + '/' + j.ID;
      const have = details.get(k);
      if (have && have.modify === j.JobModifyIndex) continue;
      details.set(k, { modify: j.JobModifyIndex, job: have && have.job });
      get(jobPath(j.ID) + '?namespace=' + encodeURIComponent(j.Namespace)).then((full) => {
        details.set(k, { modify: j.JobModifyIndex, job: full });
        draw();
      }).catch(() => {});
    }
    draw();
  }, { onError, topics: ['Job'] });
  watch('/v1/deployments?namespace=*', (list) => { deps = list || []; draw(); }, { onError, topics: ['Deployment'] });
}

function jobPage() {
  const jobID = body.dataset.job, ns = body.dataset.namespace || 'default';
  const q = '?namespace=' + encodeURIComponent(ns);
  const jp = jobPath(jobID);
  watch(jp + q, (j) => {
    const st = document.getElementById('job-status');
    st.textContent = j.Status; st.dataset.status = j.Status;
    const facts = document.getElementById('job-facts');
    const f = (k, v) => el('div', {}, el('dt', {}, k), el('dd', {}, v));
    facts.replaceChildren(f('Type', j.Type), f('Version', 'v' + j.Version), f('Namespace', j.Namespace),
      f('Datacenters', (j.Datacenters || []).join(', ')), f('Node pool', j.NodePool || 'default'),
      f('Groups', (j.TaskGroups || []).map((g) => g.Name).join(', ')), f('Priority', String(j.Priority)));
  }, { onError, topics: ['Job:' + jobID] });

  watch(jp + '/deployment' + q, (d) => {
    const box = document.getElementById('job-deployment');
    box.classList.toggle('muted', !d);
    if (!d) { box.replaceChildren('No deployment.'); return; }
    box.replaceChildren(el('p', {}, badge(d.Status), ' v' + d.JobVersion + ' · ', el('span', {}, d.StatusDescription), ' · ',
      el('a', { href: '/ui/jobs/' + encodeURIComponent(jobID) + '@' + encodeURIComponent(ns) + '/rollout' }, 'open the rollout view')));
  }, { onError, topics: ['Deployment:' + jobID] });

  let versions = [];
  watch(jp + '/versions' + q + '&diffs=true', (r) => {
    versions = r.Versions || [];
    const diffs = r.Diffs || [];
    const tbody = document.querySelector('#versions-table tbody');
    tbody.replaceChildren(...versions.map((v, i) => {
      const diff = diffs[i];
      const changes = diff ? countChanges(diff) : 0;
      const revert = el('button', { type: 'button', 'data-version': v.Version }, 'Revert to v' + v.Version);
      revert.addEventListener('click', (ev) => runAction(ev.currentTarget,
        () => put(jp + '/revert' + q, { JobID: jobID, JobVersion: v.Version })));
      return el('tr', {}, el('td', {}, 'v' + v.Version), el('td', {}, v.Stable ? 'yes' : 'no'),
        el('td', {}, fmtTime(v.SubmitTime)),
        el('td', {}, v.VersionTag && v.VersionTag.Name ? [el('strong', {}, v.VersionTag.Name), ' ', v.VersionTag.Description || ''] : '–'),
        el('td', {}, i === versions.length - 1 ? 'first version' : changes + ' change' + (changes === 1 ? '' : 's')),
        el('td', {}, i === 0 ? el('span', { class: 'muted' }, 'current') : revert));
    }));
    const opts = (sel, pick) => {
      const keep = sel.value;
      sel.replaceChildren(...versions.map((v) => el('option', { value: v.Version }, 'v' + v.Version)));
      sel.value = keep !== '' && versions.some((v) => String(v.Version) === keep) ? keep : pick;
    };
    if (versions.length) {
      opts(document.getElementById('diff-from'), String(versions[Math.min(1, versions.length - 1)].Version));
      opts(document.getElementById('diff-to'), String(versions[0].Version));
    }
  }, { onError, topics: ['Job:' + jobID] });

  document.getElementById('diff-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const from = document.getElementById('diff-from').value, to = document.getElementById('diff-to').value;
    const out = document.getElementById('diff-out');
    try {
      const r = await get(jp + '/versions' + q + '&diffs=true&diff_version=' + encodeURIComponent(from));
      const i = (r.Versions || []).findIndex((v) => String(v.Version) === to);
      const diff = (r.Diffs || [])[i];
      out.replaceChildren(el('h3', {}, `v${from} → v${to}`), diff && countChanges(diff) ? renderDiff(diff) : el('p', { class: 'muted' }, 'No differences.'));
    } catch (err) {
      out.replaceChildren(el('p', {}, 'Diff refused: ' + err.message));
    }
  });

  watch(jp + '/allocations' + q + '&all=true', (allocs) => {
    const tbody = document.querySelector('#allocs-table tbody');
    allocs = (allocs || []).sort((a, b) => b.CreateIndex - a.CreateIndex);
    tbody.replaceChildren(...(allocs.length ? allocs.slice(0, 500).map((a) => el('tr', {},
      el('td', {}, allocLink(a)), el('td', {}, nodeLink(a.NodeID, a.NodeName)), el('td', {}, 'v' + a.JobVersion),
      el('td', {}, a.DesiredStatus), el('td', {}, badge(a.ClientStatus)), el('td', {}, healthOf(a)),
      el('td', {}, fmtTime(a.CreateTime)))) : [emptyRow(7, 'No allocations.')]));
  }, { onError, topics: ['Allocation:' + jobID] });

  watch(jp + '/evaluations' + q, (evals) => {
    const tbody = document.querySelector('#evals-table tbody');
    evals = (evals || []).sort((a, b) => b.CreateIndex - a.CreateIndex).slice(0, 100);
    tbody.replaceChildren(...(evals.length ? evals.map((e) => el('tr', {},
      el('td', { class: 'mono' }, shortID(e.ID)), el('td', {}, e.TriggeredBy), el('td', {}, badge(e.Status)),
      el('td', {}, e.StatusDescription || ''), el('td', {}, fmtTime(e.CreateTime)))) : [emptyRow(5, 'No evaluations.')]));
  }, { onError, topics: ['Evaluation:' + jobID] });
  // Polled: the image watcher's state has no event topic, and it changes rarely.
  watch(jp + '/image-updates' + q, (st) => {
    const tasks = (st && st.Tasks) || [];
    document.getElementById('images-section').hidden = !tasks.length;
    document.querySelector('#images-table tbody').replaceChildren(...tasks.map((t) => el('tr', {},
      el('td', {}, t.Group + '/' + t.Task), el('td', {}, el('code', {}, t.Image)),
      el('td', {}, t.AutoUpdate ? 'on' : 'off'),
      el('td', {}, t.LastCheck && !t.LastCheck.startsWith('0001') ? fmtTime(t.LastCheck) + (t.LastError ? ' — ' + t.LastError : '') : 'never'),
      el('td', {}, t.Pending ? el('code', {}, t.Pending) : '–'))));
  }, { onError: () => {}, poll: true });
}

function countChanges(d) {
  if (!d || d.Type === 'None') return 0;
  let n = 0;
  const walk = (o) => {
    for (const f of o.Fields || []) if (f.Type !== 'None') n++;
    for (const x of o.Objects || []) walk(x);
    for (const x of o.TaskGroups || []) walk(x);
    for (const x of o.Tasks || []) walk(x);
  };
  walk(d);
  return n;
}

// renderDiff draws a job diff tree, leaving out what did not change.
function renderDiff(d) {
  const node = (o, label) => {
    if (!o || o.Type === 'None') return null;
    const kids = [];
    for (const f of o.Fields || []) {
      if (f.Type === 'None') continue;
      kids.push(el('li', { class: f.Type }, (f.Type === 'Added' ? '+ ' : f.Type === 'Deleted' ? '- ' : '~ ') + f.Name + ': ',
        f.Type !== 'Added' ? el('span', { class: 'old' }, JSON.stringify(f.Old)) : '', f.Type === 'Edited' ? ' → ' : '',
        f.Type !== 'Deleted' ? el('span', { class: 'new' }, JSON.stringify(f.New)) : ''));
    }
    for (const x of o.Objects || []) kids.push(node(x, x.Name));
    for (const x of o.TaskGroups || []) kids.push(node(x, 'group "' + x.Name + '"'));
    for (const x of o.Tasks || []) kids.push(node(x, 'task "' + x.Name + '"'));
    return el('li', { class: o.Type }, `${o.Type === 'Added' ? '+' : o.Type === 'Deleted' ? '-' : '~'} ${label}`, el('ul', {}, kids.filter(Boolean)));
  };
  return el('ul', {}, node(d, 'job "' + d.ID + '"'));
}

function allocPage() {
  const id = body.dataset.alloc;
  let logAbort = null, logKey = '';
  const taskSel = document.getElementById('log-task'), typeSel = document.getElementById('log-type');
  const out = document.getElementById('log-out'), state = document.getElementById('log-state');
  const startLogs = () => {
    const key = taskSel.value + '/' + typeSel.value;
    if (!taskSel.value || key === logKey) return;
    logKey = key;
    if (logAbort) logAbort.abort();
    logAbort = new AbortController();
    out.textContent = '';
    text(state, 'following…');
    const path = `/v1/client/fs/logs/${encodeURIComponent(id)}?task=${encodeURIComponent(taskSel.value)}&type=${typeSel.value}&follow=true&plain=true&origin=end&offset=65536`;
    const signal = logAbort.signal;
    follow(path, (chunk) => {
      const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
      out.textContent = (out.textContent + chunk).slice(-200000);
      if (stick) out.scrollTop = out.scrollHeight;
    }, { signal }).then(() => { if (!signal.aborted) text(state, 'end of log'); })
      .catch((err) => { if (!signal.aborted) text(state, 'log unavailable: ' + err.message); });
  };
  taskSel.addEventListener('change', startLogs);
  typeSel.addEventListener('change', startLogs);

  watch('/v1/allocation/' + encodeURIComponent(id), (a) => {
    text(document.getElementById('alloc-name'), a.Name);
    const st = document.getElementById('alloc-status');
    st.textContent = a.ClientStatus; st.dataset.status = a.ClientStatus;
    const jl = document.getElementById('alloc-job');
    jl.textContent = a.JobID; jl.href = '/ui/jobs/' + encodeURIComponent(a.JobID) + '@' + encodeURIComponent(a.Namespace);
    const f = (k, v) => el('div', {}, el('dt', {}, k), el('dd', {}, v));
    document.getElementById('alloc-facts').replaceChildren(
      f('ID', el('span', { class: 'mono' }, a.ID)), f('Node', nodeLink(a.NodeID, a.NodeName)),
      f('Job version', 'v' + (a.Job ? a.Job.Version : a.JobVersion)), f('Desired', a.DesiredStatus + (a.DesiredDescription ? ' — ' + a.DesiredDescription : '')),
      f('Deployment health', healthOf(a)), f('Created', fmtTime(a.CreateTime)));
    const tasks = Object.entries(a.TaskStates || {}).sort();
    document.getElementById('alloc-tasks').replaceChildren(...(tasks.length ? tasks.map(([name, ts]) => el('div', { class: 'task' },
      el('h3', {}, name, badge(ts.State), ts.Failed ? badge('failed') : null, ts.Restarts ? el('span', { class: 'muted small' }, ts.Restarts + ' restarts') : null),
      el('div', { class: 'table-wrap' }, el('table', { class: 'list compact' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Time'), el('th', { scope: 'col' }, 'Type'), el('th', { scope: 'col' }, 'Message'))),
        el('tbody', {}, ...[...(ts.Events || [])].reverse().map((e) => el('tr', {},
          el('td', {}, fmtTime(e.Time)), el('td', {}, e.Type), el('td', {}, e.DisplayMessage || e.Message || '')))))))) :
      [el('p', { class: 'muted' }, 'No task has started yet.')]));
    const names = tasks.map(([n]) => n);
    if (names.join() !== [...taskSel.options].map((o) => o.value).join()) {
      const keep = taskSel.value;
      taskSel.replaceChildren(...names.map((n) => el('option', {}, n)));
      if (names.includes(keep)) taskSel.value = keep;
      startLogs();
    }
  }, { onError, topics: ['Allocation:' + id] });
}

function nodesPage() {
  watch('/v1/nodes', (nodes) => {
    const tbody = document.querySelector('#nodes-table tbody');
    nodes = (nodes || []).sort((a, b) => a.Name.localeCompare(b.Name, undefined, { numeric: true }));
    tbody.replaceChildren(...(nodes.length ? nodes.map((n) => el('tr', {},
      el('td', {}, nodeLink(n.ID, n.Name)), el('td', {}, badge(n.Status)), el('td', {}, n.SchedulingEligibility),
      el('td', {}, n.Drain ? badge('draining') : 'no'), el('td', {}, n.Datacenter), el('td', {}, n.NodePool || 'default'),
      el('td', { class: 'mono' }, n.Address || ''))) : [emptyRow(7, 'No nodes have registered.')]));
  }, { onError, topics: ['Node'] });
}

function nodePage() {
  const id = body.dataset.node;
  const np = '/v1/node/' + encodeURIComponent(id);
  watch(np, (n) => {
    text(document.getElementById('node-name'), n.Name);
    const st = document.getElementById('node-status');
    st.textContent = n.Status; st.dataset.status = n.Status;
    const f = (k, v) => el('div', {}, el('dt', {}, k), el('dd', {}, v));
    const drain = n.DrainStrategy;
    document.getElementById('node-facts').replaceChildren(
      f('ID', el('span', { class: 'mono' }, n.ID)), f('Datacenter', n.Datacenter), f('Node pool', n.NodePool || 'default'),
      f('Address', n.HTTPAddr || ''), f('Eligibility', n.SchedulingEligibility),
      f('Drain', drain ? (drain.ForceDeadline && !drain.ForceDeadline.startsWith('0001') ? 'until ' + fmtTime(drain.ForceDeadline) : 'yes') : 'no'),
      f('Drivers', Object.entries(n.Drivers || {}).filter(([, d]) => d.Detected).map(([k]) => k).join(', ')));
    document.getElementById('act-drain').hidden = !!drain;
    document.getElementById('act-undrain').hidden = !drain;
    document.getElementById('act-eligible').hidden = n.SchedulingEligibility === 'eligible';
    document.getElementById('act-ineligible').hidden = n.SchedulingEligibility !== 'eligible';
  }, { onError, topics: ['Node:' + id] });
  watch(np + '/allocations', (allocs) => {
    allocs = (allocs || []).sort((a, b) => b.CreateIndex - a.CreateIndex);
    document.querySelector('#node-allocs tbody').replaceChildren(...(allocs.length ? allocs.map((a) => el('tr', {},
      el('td', {}, allocLink(a)), el('td', {}, jobLink(a.JobID, a.Namespace)), el('td', {}, 'v' + a.JobVersion),
      el('td', {}, a.DesiredStatus), el('td', {}, badge(a.ClientStatus)), el('td', {}, healthOf(a)),
      el('td', {}, fmtTime(a.CreateTime)))) : [emptyRow(7, 'No allocations on this node.')]));
  }, { onError, topics: ['Allocation'] });
  const click = (bid, fn) => document.getElementById(bid).addEventListener('click', (ev) => runAction(ev.currentTarget, fn));
  click('act-drain', () => {
    const secs = Number(document.getElementById('drain-deadline').value);
    return put(np + '/drain', { NodeID: id, DrainSpec: { Deadline: secs * 1e9, IgnoreSystemJobs: false }, MarkEligible: false });
  });
  click('act-undrain', () => put(np + '/drain', { NodeID: id, DrainSpec: null, MarkEligible: true }));
  click('act-eligible', () => put(np + '/eligibility', { NodeID: id, Eligibility: 'eligible' }));
  click('act-ineligible', () => put(np + '/eligibility', { NodeID: id, Eligibility: 'ineligible' }));
}

const pages = { jobs: jobsPage, job: jobPage, rollout: startRollout, alloc: allocPage, nodes: nodesPage, node: nodePage };
(pages[body.dataset.page] || (() => {}))(body);
