// Starts the page's first API read (named by the script's data-first) while
// the modules load; api.js takes its answer over (firstRead). A classic
// script, so that it runs before the modules are even fetched.
(() => {
  const first = document.currentScript.dataset.first;
  if (!first) return;
  const t = sessionStorage.getItem('drover.acl-token');
  window.droverFirstRead = { path: first, response: fetch(first, { headers: t ? { 'X-Nomad-Token': t } : {} }) };
})();
