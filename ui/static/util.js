// Small DOM and formatting helpers shared by the pages.

// el builds an element; attrs are attributes ("class", "href", ...), kids
// are nodes or strings (strings become text, never HTML).
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null) continue;
    e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

export function text(node, s) { if (node && node.textContent !== s) node.textContent = s; }

export const shortID = (id) => (id || '').slice(0, 8);

export function badge(status) { return el('span', { class: 'badge', 'data-status': status }, status); }

// jobPath is the API path of a job.
export const jobPath = (id) => '/v1/job/' + encodeURIComponent(id);

function toDate(t) {
  if (t === undefined || t === null || t === 0) return null;
  if (typeof t === 'number') return new Date(t > 1e14 ? t / 1e6 : t); // ns or ms
  const d = new Date(t);
  return isNaN(d) || d.getFullYear() < 1971 ? null : d;
}

export function fmtTime(t) {
  const d = toDate(t);
  if (!d) return '–';
  const sameDay = d.toDateString() === new Date().toDateString();
  return sameDay ? d.toLocaleTimeString() : d.toLocaleString();
}

export function fmtRelative(t) {
  const d = toDate(t);
  if (!d) return '–';
  const s = Math.round((d - Date.now()) / 1000);
  const abs = Math.abs(s);
  const span = abs < 90 ? `${abs}s` : abs < 5400 ? `${Math.round(abs / 60)}m` : `${Math.round(abs / 3600)}h`;
  return (s >= 0 ? 'in ' + span : span + ' ago') + ` (${d.toLocaleTimeString()})`;
}

// flash shows a message at the top of the page (an error unless ok).
export function flash(msg, ok = false) {
  const f = document.getElementById('flash');
  f.textContent = msg;
  f.classList.toggle('ok', ok);
  f.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { f.hidden = true; }, ok ? 4000 : 15000);
}

// runAction runs fn for a button: disabled while in flight, Nomad's error
// text shown when refused.
export async function runAction(button, fn) {
  button.disabled = true;
  try {
    await fn();
    flash(button.textContent.trim() + ': done', true);
  } catch (err) {
    flash(button.textContent.trim() + ' refused: ' + err.message);
  } finally {
    button.disabled = false;
  }
}

// healthOf names an allocation's deployment health.
export function healthOf(a) {
  const ds = a.DeploymentStatus;
  if (!ds || ds.Healthy === undefined || ds.Healthy === null) return ds && ds.Canary ? 'canary, pending' : '–';
  return (ds.Healthy ? 'healthy' : 'unhealthy') + (ds.Canary ? ' (canary)' : '');
}

// imagesOf maps task name to its Docker image in a job version.
export function imagesOf(job) {
  const out = {};
  for (const g of job.TaskGroups || []) {
    for (const t of g.Tasks || []) {
      if (t.Config && typeof t.Config.image === 'string') out[(job.TaskGroups.length > 1 ? g.Name + '/' : '') + t.Name] = t.Config.image;
    }
  }
  return out;
}

export function allocLink(a) { return el('a', { href: '/ui/allocations/' + a.ID, class: 'mono' }, shortID(a.ID)); }
export function nodeLink(id, name) { return el('a', { href: '/ui/nodes/' + id }, name || shortID(id)); }
export function jobLink(id, ns) { return el('a', { href: '/ui/jobs/' + encodeURIComponent(id) + '@' + encodeURIComponent(ns || 'default') }, id); }

export function emptyRow(cols, msg) { return el('tr', {}, el('td', { colspan: cols, class: 'muted' }, msg)); }
