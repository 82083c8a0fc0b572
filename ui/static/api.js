// The UI's only door to the cluster: the Nomad-compatible /v1 HTTP API,
// with the ACL token from this tab's session storage.
//
// Live updates go through watch(): today a blocking-query loop per path.
// When the agent serves /v1/event/stream, watch() can refetch on the
// stream's events for the path's topic instead; no page needs to change.

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

function isDenied(status, text) { return status === 403 || status === 401 || /permission denied|acl token/i.test(text); }

// request sends one API call. A refusal without a token asks for one once
// and retries; with a token, the refusal is the caller's error to show.
export async function request(method, path, body, opts = {}) {
  const headers = {};
  const t = token();
  if (t) headers['X-Nomad-Token'] = t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, {
    method, headers, signal: withPage(opts.signal),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
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

export const get = (path, opts) => request('GET', path, undefined, opts).then((r) => r.data);
export const put = (path, body) => request('PUT', path, body === undefined ? {} : body).then((r) => r.data);

function withQuery(path, params) {
  const q = new URLSearchParams(params).toString();
  return path + (path.includes('?') ? '&' : '?') + q;
}

// A browser holds at most six HTTP/1.1 connections to the agent, and a
// blocking query holds one for up to its wait. The first MAX_BLOCKING
// watches of a page block; later ones poll every POLL_MS, so that two
// connections are always left for actions, logs and page loads.
const MAX_BLOCKING = 4;
const POLL_MS = 2000;
let blocking = 0;

// watch calls onData with the path's answer now and after every change,
// until signal aborts. onError (optional) hears failures; the loop backs
// off and goes on.
export function watch(path, onData, { signal, onError, wait = '60s' } = {}) {
  let index = 0;
  const blocks = blocking < MAX_BLOCKING;
  if (blocks) {
    blocking++;
    signal?.addEventListener('abort', () => blocking--, { once: true });
  }
  (async () => {
    let backoff = 500;
    while (!signal?.aborted && !pageGone.signal.aborted) {
      try {
        if (!blocks && index) await new Promise((res) => setTimeout(res, POLL_MS));
        const r = await request('GET', index && blocks ? withQuery(path, { index, wait }) : path, undefined, { signal });
        backoff = 500;
        if (r.index < index) index = 0; // a new leader's smaller index: start over
        if (!index || r.index !== index) {
          index = r.index || 1;
          onData(r.data, r.index);
        }
      } catch (err) {
        if (signal?.aborted || pageGone.signal.aborted) return;
        onError?.(err);
        await new Promise((res) => setTimeout(res, backoff));
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
