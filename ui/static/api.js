// The UI's only door to the cluster: the Nomad-compatible /v1 HTTP API,
// with the ACL token from this tab's session storage.
//
// Live updates follow the agent's event stream (/v1/event/stream): one
// stream per page, through which watch() refetches a path when an event of
// its topics arrives (the rollout view applies events itself, see
// rollout.js). When the stream cannot be had, watch() falls back to a
// blocking-query loop per path.

const TOKEN_KEY = 'drover.acl-token';

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

// APIError carries the HTTP status and Nomad's error text as it sent it.
export class APIError extends Error {
  constructor(status, text) { super(text); this.status = status; }
}

// Every request of the page is aborted when the page goes away, so that
// a long poll left behind never holds one of the browser's six
// connections to the agent that the next page needs.
const pageGone = new AbortController();
addEventListener('pagehide', () => pageGone.abort());
const withPage = (signal) => (signal ? AbortSignal.any([signal, pageGone.signal]) : pageGone.signal);

let asking = null; // one token prompt at a time

// askToken opens the token dialog; resolves true when a token was entered.
export function askToken(reason) {
  if (asking) return asking;
  const dialog = document.getElementById('token-dialog');
  if (!dialog) return Promise.resolve(false);
  document.getElementById('token-reason').textContent = reason ||
    'Enter an ACL token. It is kept in this browser tab\'s session storage only.';
  const input = document.getElementById('token-input');
  input.value = token();
  asking = new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      asking = null;
      if (dialog.returnValue === 'save' && input.value.trim()) { setToken(input.value.trim()); resolve(true); return; }
      if (dialog.returnValue === 'clear') setToken('');
      resolve(false);
    }, { once: true });
  });
  dialog.showModal();
  input.focus();
  return asking;
}

// takeFirstRead returns, once, the response of the read boot.js began for
// this path, if it did.
function takeFirstRead(method, path) {
  const f = window.droverFirstRead;
  if (method !== 'GET' || !f || f.path !== path) return null;
  window.droverFirstRead = null;
  return f.response;
}

function isDenied(status, text) { return status === 403 || status === 401 || /permission denied|acl token/i.test(text); }

// request sends one API call. A refusal without a token asks for one once
// and retries; with a token, the refusal is the caller's error to show.
export async function request(method, path, body, opts = {}) {
  const headers = {};
  const t = token();
  if (t) headers['X-Nomad-Token'] = t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await (takeFirstRead(method, path) || fetch(path, {
    method, headers, signal: withPage(opts.signal),
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
  if (!resp.ok) {
    const text = (await resp.text()).trim() || resp.statusText;
    if (!t && !opts.retried && isDenied(resp.status, text) &&
        await askToken('The cluster refused the request: ' + text)) {
      return request(method, path, body, { ...opts, retried: true });
    }
    throw new APIError(resp.status, text);
  }
  const index = Number(resp.headers.get('X-Nomad-Index') || 0);
  const raw = await resp.text();
  return { data: raw ? JSON.parse(raw) : null, index };
}

// get reads path; with opts.indexed it returns {data, index}.
export const get = (path, opts) => request('GET', path, undefined, opts).then((r) => (opts && opts.indexed ? r : r.data));
export const put = (path, body) => request('PUT', path, body === undefined ? {} : body).then((r) => r.data);

function withQuery(path, params) {
  const q = new URLSearchParams(params).toString();
  return path + (path.includes('?') ? '&' : '?') + q;
}

// A browser holds at most six HTTP/1.1 connections to the agent, and a
// blocking query holds one for up to its wait. The first MAX_BLOCKING
// blocking watches of a page block; later ones poll every POLL_MS, so that
// two connections are always left for actions, logs and page loads.
const MAX_BLOCKING = 4;
const POLL_MS = 2000;
let blocking = 0;

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const gone = (signal) => signal?.aborted || pageGone.signal.aborted;

// STREAM_SILENCE_MS: the agent sends a heartbeat every 10 s; a stream
// silent for longer than this is taken for broken.
const STREAM_SILENCE_MS = 35000;

// eventStream reads /v1/event/stream from index on (topics as the API
// names them: "Job", "Job:<id>", ...), calling onBatch with each
// {Index, Events}; heartbeats are skipped. It resolves when the agent ends
// the stream and rejects when it is refused (an APIError, before onOpen)
// or breaks.
export async function eventStream(topics, index, onBatch, { signal, namespace = '*', onOpen } = {}) {
  const q = new URLSearchParams();
  for (const t of topics) q.append('topic', t);
  q.set('namespace', namespace);
  if (index) q.set('index', String(index));
  const headers = {};
  if (token()) headers['X-Nomad-Token'] = token();
  const quiet = new AbortController();
  const resp = await fetch('/v1/event/stream?' + q, { headers, signal: AbortSignal.any([withPage(signal), quiet.signal]) });
  if (!resp.ok) throw new APIError(resp.status, (await resp.text()).trim() || resp.statusText);
  onOpen?.();
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '', timer = 0;
  const arm = () => { clearTimeout(timer); timer = setTimeout(() => quiet.abort(), STREAM_SILENCE_MS); };
  try {
    for (arm(); ; arm()) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const msg = JSON.parse(line);
        if (msg.Events && msg.Events.length) onBatch(msg);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

// topicMatches says whether an event is one of topics ("Topic" or
// "Topic:key", the key matching the event's key or filter keys).
export function topicMatches(topics, e) {
  return topics.some((t) => {
    const [topic, key] = t.split(':');
    return topic === e.Topic && (!key || key === '*' || key === e.Key || (e.FilterKeys || []).includes(key));
  });
}

// The page's event stream, shared by every watch that names topics.
const hub = { subs: new Set(), topics: new Set(), running: false, blocking: false, index: 0, restart: null };

// watch calls onData with the path's answer now and after every change,
// until signal aborts. With topics, a change is an event of those topics
// on the page's stream (the path is read again); without, or when the
// stream fails, a blocking query on the path. onError (optional) hears
// failures; the loop backs off and goes on.
export function watch(path, onData, { signal, onError, wait = '60s', topics, poll = false } = {}) {
  if (!topics || hub.blocking) { blockingWatch(path, onData, { signal, onError, wait, poll }); return; }
  let loaded;
  const sub = { path, onData, onError, topics, signal, wait, busy: false, dirty: false, index: 0, seen: false,
    loaded: new Promise((res) => { loaded = res; }) };
  sub.loadedNow = loaded;
  hub.subs.add(sub);
  signal?.addEventListener('abort', () => hub.subs.delete(sub), { once: true });
  refetch(sub);
  const missing = topics.filter((t) => !hub.topics.has(t));
  for (const t of missing) hub.topics.add(t);
  if (!hub.running) { hub.running = true; queueMicrotask(runHub); } else if (missing.length && hub.restart) hub.restart();
}

// refetch reads a subscriber's path again (once more if events arrived
// during the read) and hands on a changed answer.
async function refetch(sub) {
  if (sub.busy) { sub.dirty = true; return; }
  sub.busy = true;
  try {
    do {
      sub.dirty = false;
      const r = await request('GET', sub.path, undefined, { signal: sub.signal });
      sub.backoff = 0;
      if (!sub.seen || r.index !== sub.index) {
        sub.seen = true;
        sub.index = r.index;
        sub.onData(r.data, r.index);
      }
    } while (sub.dirty && !gone(sub.signal));
  } catch (err) {
    if (!gone(sub.signal)) {
      sub.onError?.(err);
      // A failed read is tried again, backing off, as events may not come.
      sub.backoff = Math.min((sub.backoff || 500) * 2, 10000);
      setTimeout(() => { if (!gone(sub.signal) && hub.subs.has(sub)) refetch(sub); }, sub.backoff);
    }
  } finally {
    sub.busy = false;
    sub.loadedNow();
  }
}

// runHub keeps the page's stream open from the index of the first answers
// on. A stream that ends or breaks is opened again (what it missed is read
// again); one that is refused, or breaks three times running, gives way to
// blocking queries.
async function runHub() {
  await Promise.all([...hub.subs].map((s) => s.loaded));
  const indexes = [...hub.subs].map((s) => s.index).filter((i) => i > 0);
  hub.index = indexes.length ? Math.min(...indexes) : 0;
  let failures = 0;
  while (!pageGone.signal.aborted) {
    const ctl = new AbortController();
    let opened = false, restarted = false;
    hub.restart = () => { restarted = true; ctl.abort(); };
    try {
      await eventStream([...hub.topics], hub.index ? hub.index + 1 : 0, (b) => {
        hub.index = b.Index;
        failures = 0;
        for (const sub of hub.subs) if (b.Events.some((e) => topicMatches(sub.topics, e))) refetch(sub);
      }, { signal: ctl.signal, onOpen: () => { opened = true; window.droverLive = 'stream'; } });
    } catch (err) {
      if (pageGone.signal.aborted) return;
      if (restarted) continue;
      if (!opened && err instanceof APIError) failures = 3;
    }
    if (++failures >= 3) break;
    for (const sub of hub.subs) refetch(sub);
    await sleep(500 * failures);
  }
  if (pageGone.signal.aborted) return;
  hub.blocking = true;
  window.droverLive = 'blocking';
  for (const sub of hub.subs) {
    hub.subs.delete(sub);
    blockingWatch(sub.path, sub.onData, { signal: sub.signal, onError: sub.onError, wait: sub.wait });
  }
}

// blockingWatch is watch() through blocking queries on the path (with
// poll, or past MAX_BLOCKING, a read every POLL_MS).
function blockingWatch(path, onData, { signal, onError, wait = '60s', poll = false } = {}) {
  let index = 0;
  const blocks = !poll && blocking < MAX_BLOCKING;
  if (blocks) {
    blocking++;
    signal?.addEventListener('abort', () => blocking--, { once: true });
  }
  (async () => {
    let backoff = 500;
    while (!gone(signal)) {
      try {
        if (!blocks && index) await sleep(POLL_MS);
        const r = await request('GET', index && blocks ? withQuery(path, { index, wait }) : path, undefined, { signal });
        backoff = 500;
        if (r.index < index) index = 0; // a new leader's smaller index: start over
        if (!index || r.index !== index) {
          index = r.index || 1;
          onData(r.data, r.index);
        }
      } catch (err) {
        if (gone(signal)) return;
        onError?.(err);
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 10000);
      }
    }
  })();
}

// follow streams a plain-text log file, calling onText with each chunk.
export async function follow(path, onText, { signal } = {}) {
  const headers = {};
  if (token()) headers['X-Nomad-Token'] = token();
  const resp = await fetch(path, { headers, signal: withPage(signal) });
  if (!resp.ok) throw new APIError(resp.status, (await resp.text()).trim() || resp.statusText);
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(dec.decode(value, { stream: true }));
  }
}
