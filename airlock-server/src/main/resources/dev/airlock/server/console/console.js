// The Airlock web console: one page, one module, no framework. Every number it shows and every
// action it takes goes through the REST API (/v1/...) with the session cookie, so the server's
// policy decides it exactly as for that client's bearer token. Text from the server is always
// set as textContent, never as HTML.

const CSRF_HEADER = 'X-Airlock-CSRF';
const POLL_HEADER = 'X-Airlock-Poll';
let session = null;      // {client, csrf, operations}
let timer = null;        // the polling of the page shown
let generation = 0;      // the navigation the page shown belongs to: a page left before its data came draws nothing
let events = null;       // the approvals event stream

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

/**
 * Calls the REST API; throws an Error with the server's message when it refuses. {@code poll} marks
 * a read the page's refresh makes: the audit log folds those (docs/audit.md, "Folded requests").
 */
async function api(method, path, body, poll = false) {
  const headers = {};
  if (poll) headers[POLL_HEADER] = '1';
  if (method !== 'GET') headers[CSRF_HEADER] = session.csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status === 401) { showSignIn('The session ended: sign in again.'); throw new Error('signed out'); }
  if (r.status === 204) return null;
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(json.error?.message || json.message || ('HTTP ' + r.status));
  return json;
}

const may = op => session.operations.includes(op);

/**
 * POSTs {@code body} and reads the answer as JSON lines as they come (an execution's stream:
 * {"type": "stdout"|"stderr"|"heartbeat"|"result", ...}), handing each to {@code onLine}.
 */
async function apiLines(path, body, onLine) {
  const r = await fetch(path, { method: 'POST', credentials: 'same-origin', body: JSON.stringify(body),
    headers: { [CSRF_HEADER]: session.csrf, 'Content-Type': 'application/json', Accept: 'application/x-ndjson' } });
  if (r.status === 401) { showSignIn('The session ended: sign in again.'); throw new Error('signed out'); }
  if (!r.ok) { const json = await r.json().catch(() => ({})); throw new Error(json.error?.message || ('HTTP ' + r.status)); }
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      if (line.trim()) onLine(JSON.parse(line));
    }
  }
}

/** A GET of the API whose answer is text (a process's output), not JSON; {@code poll} as for {@link api}. */
async function apiText(path, poll = false) {
  const r = await fetch(path, { credentials: 'same-origin', headers: poll ? { [POLL_HEADER]: '1' } : {} });
  if (r.status === 401) { showSignIn('The session ended: sign in again.'); throw new Error('signed out'); }
  if (!r.ok) { const json = await r.json().catch(() => ({})); throw new Error(json.error?.message || ('HTTP ' + r.status)); }
  return r.text();
}

/** Sends a file's bytes as the body of a PUT (the file upload endpoint), with the CSRF header. */
async function apiUpload(path, file) {
  const r = await fetch(path, { method: 'PUT', headers: { [CSRF_HEADER]: session.csrf, 'Content-Type': 'application/octet-stream' },
    credentials: 'same-origin', body: file });
  if (r.status === 401) { showSignIn('The session ended: sign in again.'); throw new Error('signed out'); }
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(json.error?.message || ('HTTP ' + r.status));
  return json;
}

function bytes(n) {
  if (n == null) return '—';
  return n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KiB' : n < 1073741824 ? (n / 1048576).toFixed(1) + ' MiB'
    : (n / 1073741824).toFixed(2) + ' GiB';
}

/** CPU time so far, and the share of one CPU since the previous reading of the same sandbox (kept in seen). */
function cpu(s, seen) {
  if (!s.usage) return '—';
  const now = Date.now(), prev = seen.get(s.id);
  seen.set(s.id, { at: now, cpu: s.usage.cpuSeconds });
  const total = s.usage.cpuSeconds.toFixed(2) + ' s';
  if (!prev || now <= prev.at) return total;
  return total + ' (' + Math.max(0, Math.round(100 * (s.usage.cpuSeconds - prev.cpu) / ((now - prev.at) / 1000))) + '%)';
}

/** Extends a sandbox's life by ten minutes beyond what it has left (the server bounds it by the profile). */
async function extend(s) {
  const remaining = Math.max(0, Math.round((Date.parse(s.expiresAt) - Date.now()) / 1000));
  return api('POST', '/v1/sandboxes/' + encodeURIComponent(s.id) + '/ttl', { ttlSeconds: remaining + 600 });
}

/** A record's detail: one line of JSON, which opens to the whole of it laid out. */
function detail(d) {
  return el('details', { class: 'detail' }, el('summary', { text: JSON.stringify(d) }), el('pre', { text: JSON.stringify(d, null, 2) }));
}

/** An instant as this browser's local date and time, to the second (the exact instant in the title). */
function when(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? (iso ?? '') : new Date(t).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

function age(iso) {
  if (iso == null) return '—';   // a lost sandbox (its node is down) has no times
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h';
}

function left(iso) {
  if (iso == null) return '—';
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return s <= 0 ? 'expired' : s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h';
}

/** Thrown where a page that was left meanwhile would draw or poll: {@link route} ignores it. */
class Stale extends Error {}

/** Draws the page of navigation {@code mine}, unless another navigation came since. */
function page(mine, title, ...children) {
  if (mine !== generation) throw new Stale();
  const p = document.getElementById('page');
  p.replaceChildren(el('h1', { text: title }), ...children);
  p.hidden = false;
  return p;
}

/** Polls {@code fn} every {@code ms} for the page of navigation {@code mine}, unless another navigation came since. */
function poll(mine, fn, ms) {
  if (mine !== generation) throw new Stale();
  timer = setInterval(fn, ms);
}

function stop() {
  if (timer) clearInterval(timer);
  timer = null;
}

// --- pages ---

/** The Overview's charts: [element id, title, series of GET /v1/metrics/history, how a value reads]. */
const CHARTS = [
  ['chart-sandboxes', 'Sandboxes live', 'sandboxes', v => v == null ? '' : String(v)],
  ['chart-executions', 'Executions per minute', 'executionsPerMinute', v => v == null ? '' : v.toFixed(1)],
  ['chart-refusals', 'Refusals (per interval)', 'refusals', v => v == null ? '' : String(v)],
  ['chart-egress', 'Egress bytes (per interval)', 'egressBytes', v => v == null ? '' : bytes(v)],
];

async function overview() {
  const mine = generation;
  const sandboxes = el('span', { class: 'count', id: 'count-sandboxes', text: '…' });
  const pending = el('span', { class: 'count', id: 'count-approvals', text: may('approvals') ? '…' : '—' });
  const charts = el('div', { class: 'charts', id: 'charts' });
  const chartError = el('p', { class: 'error', id: 'charts-error' });
  page(mine, 'Overview', el('div', { class: 'cards' },
    el('div', { class: 'card' }, el('div', { text: 'Live sandboxes' }), sandboxes),
    el('div', { class: 'card' }, el('div', { text: 'Pending approvals' }), pending)),
  may('metrics') ? el('h2', { text: 'The last hour' }) : '', chartError, charts);
  const refresh = async (poll) => {
    if (may('sandbox.read')) sandboxes.textContent = (await api('GET', '/v1/sandboxes', undefined, poll)).sandboxes.length;
    if (may('approvals')) pending.textContent = (await api('GET', '/v1/approvals', undefined, poll)).approvals.length;
  };
  await refresh();
  let plots = null;
  const draw = async (poll) => {
    if (!may('metrics')) return;
    const h = await api('GET', '/v1/metrics/history', undefined, poll);
    if (!plots) {
      const { default: uPlot } = await import('/console/vendor/uplot.js');
      plots = CHARTS.map(([id, title, key, fmt]) => {
        const box = el('div', { class: 'chart', id });
        charts.append(box);
        return [box, key, new uPlot({ title, width: 560, height: 200, legend: { show: false },
          series: [{}, { label: title, stroke: '#1d6fa5', fill: 'rgba(29,111,165,.12)', value: (u, v) => fmt(v) }],
          axes: [{}, { values: (u, vals) => vals.map(fmt), size: 70 }] }, [h.time, h[key]], box)];
      });
    }
    for (const [box, key, plot] of plots) {
      plot.setData([h.time, h[key]]);
      box.dataset.points = h.time.length;
      box.dataset.last = h[key][h[key].length - 1];
    }
    chartError.textContent = '';
  };
  await draw().catch(e => { chartError.textContent = e.message; });
  let ticks = 0;
  poll(mine, () => {
    refresh(true).catch(() => {});
    if (++ticks % 5 === 0) draw(true).catch(e => { chartError.textContent = e.message; });
  }, 2000);
}

/**
 * A Destroy button that asks once more: the first click arms it ("Really destroy?") for five
 * seconds, and only a click on the armed button destroys (a sandbox's files are gone for good).
 * {@code armed} (sandbox id to expiry time) outlives the button: a page that redraws its rows
 * every few seconds keeps the question asked.
 */
function destroyButton(s, armed, done, error) {
  return confirmButton({ class: 'destroy', 'data-id': s.id, title: 'destroy this sandbox: its processes end and its files are gone for good' },
    'Destroy', 'Really destroy?', armed, s.id, async () => { await api('DELETE', '/v1/sandboxes/' + encodeURIComponent(s.id)); await done(); }, error);
}

/**
 * A button for what cannot be undone: the first click arms it ({@code ask}) for five seconds, and
 * only a click on the armed button runs {@code action}. {@code armed} (key to expiry) outlives the
 * button, so a row drawn again keeps the question asked.
 */
function confirmButton(attrs, label, ask, armed, key, action, error) {
  const isArmed = () => (armed.get(key) || 0) > Date.now();
  const b = el('button', { ...attrs, type: 'button', class: attrs.class + (isArmed() ? ' armed' : ''), text: isArmed() ? ask : label });
  b.addEventListener('click', async () => {
    if (!isArmed()) {
      armed.set(key, Date.now() + 5000);
      b.textContent = ask;
      b.classList.add('armed');
      setTimeout(() => { if (!isArmed()) { b.textContent = label; b.classList.remove('armed'); } }, 5100);
      return;
    }
    armed.delete(key);
    b.disabled = true;
    try { await action(); error.textContent = ''; }
    catch (e) { error.textContent = e.message; b.disabled = false; }
  });
  return b;
}

/** Parses "k=v, k2=v2" into labels; throws on an entry without '='. */
function labels(text) {
  const out = {};
  for (const part of text.split(',').map(x => x.trim()).filter(Boolean)) {
    const at = part.indexOf('=');
    if (at <= 0) throw new Error(`label '${part}' is not key=value`);
    out[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return out;
}

/**
 * The New sandbox form: a profile of the client's, an image, limits, a lifetime and labels, each
 * optional but the profile (the server bounds each by the profile and says which rule refused);
 * opens the new sandbox's page.
 */
function newSandboxForm(error) {
  if (!may('sandbox.create')) return '';
  const profile = el('select', { id: 'new-profile', title: 'the profile: limits, network and image rules (the first is your default)',
    'aria-label': 'profile' }, ...session.profiles.map(p => el('option', { value: p, text: p })));
  const image = el('select', { id: 'new-image', 'aria-label': 'image' }, el('option', { value: '', text: "the profile's image" }));
  api('GET', '/v1/images').then(r => image.append(...r.images.map(i => el('option', { value: i.name, text: i.name })))).catch(() => {});
  const memory = el('input', { id: 'new-memory', size: '8', placeholder: 'memory: 512m', 'aria-label': 'memory, such as 512m' });
  const cpus = el('input', { id: 'new-cpus', size: '6', placeholder: 'CPUs: 1', 'aria-label': 'CPUs' });
  const ttl = el('input', { id: 'new-ttl', type: 'number', min: '1', placeholder: 'minutes: 10', 'aria-label': 'lifetime in minutes' });
  const labelField = el('input', { id: 'new-labels', placeholder: 'labels: key=value, ...', 'aria-label': 'labels' });
  const button = el('button', { type: 'submit', id: 'new-create', text: 'New sandbox' });
  const status = el('span', { id: 'new-status' });
  return el('form', { class: 'filters', id: 'new-sandbox', onsubmit: async e => {
    e.preventDefault();
    button.disabled = true;
    status.textContent = 'creating… (a profile with approvals waits for a person here)';
    try {
      const body = { profile: profile.value, labels: labels(labelField.value) };
      if (image.value) body.image = image.value;
      const limits = {};
      if (memory.value.trim()) limits.memory = memory.value.trim();
      if (cpus.value.trim()) limits.cpus = Number(cpus.value.trim());
      if (Object.keys(limits).length) body.limits = limits;
      if (ttl.value) body.ttlSeconds = Math.round(Number(ttl.value) * 60);
      const s = await api('POST', '/v1/sandboxes', body);
      error.textContent = '';
      location.hash = 'sandbox/' + encodeURIComponent(s.id);
    } catch (err) { error.textContent = err.message; }
    finally { button.disabled = false; status.textContent = ''; }
  } }, profile, image, memory, cpus, ttl, labelField, button, status);
}

async function sandboxes() {
  const mine = generation;
  const filter = el('input', { id: 'label-filter', placeholder: 'label filter: key=value' });
  const error = el('p', { class: 'error', id: 'sandboxes-error' });
  const body = el('tbody', { id: 'sandbox-rows' });
  // the columns a click on their heading sorts by (again: the other way), with the value each sorts by
  const SORTS = { Id: s => s.id, State: s => s.state, Owner: s => s.owner, Profile: s => s.profile, Image: s => s.image,
    Age: s => Date.now() - Date.parse(s.createdAt), 'TTL left': s => Date.parse(s.expiresAt), Memory: s => s.usage?.memoryBytes ?? 0 };
  let sort = { by: 'Age', down: true }; // the oldest first, as they were made
  let last = [];
  const heading = h => SORTS[h]
    ? el('th', { 'aria-sort': 'none' }, el('button', { type: 'button', class: 'sort', 'data-sort': h, text: h, onclick: () => {
        sort = { by: h, down: sort.by === h ? !sort.down : false };
        draw(last);
      } }))
    : el('th', { text: h });
  const head = el('tr', {}, ...['Id', 'State', 'Owner', 'Profile', 'Tier', 'Image', 'Age', 'TTL left', 'CPU', 'Memory', 'Labels', ''].map(heading));
  page(mine, 'Sandboxes', newSandboxForm(error), el('form', { class: 'filters', onsubmit: e => e.preventDefault() }, filter), error,
    el('table', {}, el('thead', {}, head), body));
  const seen = new Map();
  const armed = new Map();
  const refresh = async (poll) => {
    const q = filter.value.trim() ? '?label=' + encodeURIComponent(filter.value.trim()) : '';
    draw(last = (await api('GET', '/v1/sandboxes' + q, undefined, poll)).sandboxes);
  };
  const draw = unsorted => {
    const key = SORTS[sort.by];
    const list = [...unsorted].sort((a, b) => {
      const x = key(a), y = key(b);
      const c = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
      return sort.down ? -c : c;
    });
    for (const th of head.children) {
      const b = th.querySelector('button.sort');
      th.setAttribute('aria-sort', b && b.dataset.sort === sort.by ? (sort.down ? 'descending' : 'ascending') : 'none');
    }
    body.replaceChildren(...list.map(s => el('tr', { 'data-id': s.id },
      el('td', {}, el('a', { href: '#sandbox/' + encodeURIComponent(s.id), class: 'mono', text: s.id })),
      el('td', { text: s.state }), el('td', { text: s.owner }), el('td', { text: s.profile }), el('td', { text: s.isolation }),
      el('td', { text: s.image }), el('td', { text: age(s.createdAt) }), el('td', { class: 'ttl', text: left(s.expiresAt) }),
      el('td', { class: 'cpu', text: cpu(s, seen) }), el('td', { class: 'memory', text: bytes(s.usage?.memoryBytes) }),
      el('td', { text: Object.entries(s.labels || {}).map(([k, v]) => k + '=' + v).join(', ') }),
      el('td', {}, may('sandbox.extend') ? el('button', { type: 'button', class: 'extend', 'data-id': s.id, text: '+10 min',
        title: 'extend its life by ten minutes (within its profile\'s maximum lifetime)',
        onclick: async () => {
          try { await extend(s); error.textContent = ''; await refresh(); }
          catch (e) { error.textContent = e.message; }
        } }) : '', ' ', may('sandbox.destroy') ? destroyButton(s, armed, refresh, error) : ''))));
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: '12', text: 'No sandboxes.' })));
  };
  filter.addEventListener('change', () => refresh().catch(e => { error.textContent = e.message; }));
  await refresh().catch(e => { error.textContent = e.message; });
  poll(mine, () => refresh(true).catch(e => { error.textContent = e.message; }), 2000);
}

/** Fork N new sandboxes with a snapshot's files; opens the first, the others are on the Sandboxes page. */
function forkForm(snapshot, error) {
  const count = el('input', { type: 'number', class: 'fork-count', min: '1', max: '16', value: '1', title: 'how many sandboxes (1 to 16)',
    'aria-label': 'how many sandboxes to fork' });
  const button = el('button', { type: 'submit', class: 'fork', text: 'Fork', title: 'new sandboxes with these files' });
  return el('form', { class: 'fork-form', onsubmit: async e => {
    e.preventDefault();
    button.disabled = true;
    try {
      const forked = await api('POST', `/v1/snapshots/${encodeURIComponent(snapshot.id)}/fork`, { count: Number(count.value) });
      location.hash = 'sandbox/' + encodeURIComponent(forked.sandboxes[0].id);
    } catch (err) { error.textContent = err.message; button.disabled = false; }
  } }, count, button);
}

/**
 * A Run button for a script in the file browser (.py with python3, .sh with sh): it puts the
 * command in the page's Run form and runs it, so that an uploaded script runs in one click.
 */
function runFileButton(f) {
  const runner = f.type === 'file' && (f.path.endsWith('.py') ? 'python3' : f.path.endsWith('.sh') ? 'sh' : null);
  const form = document.querySelector('#run-box form');
  if (!runner || !form) return '';
  return el('button', { type: 'button', class: 'run-file', text: 'Run', title: `${runner} ${f.path}`, onclick: () => {
    document.getElementById('run-language').value = 'sh';
    document.getElementById('run-code').value = `cd "$(dirname '${quoted(f.path)}')" && ${runner} '${quoted(f.path)}'`;
    form.requestSubmit();
    form.scrollIntoView({ block: 'nearest' });
  } });
}

/** {@code text} for the inside of a shell's single quotes. */
function quoted(text) {
  return text.replaceAll("'", "'\\''");
}

/**
 * The Run form of a sandbox's page: a shell command or Python code, run to its end (within the
 * sandbox's timeout), its output shown as it comes and its exit below; for the owner only.
 */
function runForm(base, s, error) {
  if (!may('exec') || s.owner !== session.client) return '';
  const language = el('select', { id: 'run-language' }, el('option', { value: 'sh', text: 'shell' }), el('option', { value: 'python', text: 'Python' }));
  const code = el('textarea', { id: 'run-code', rows: '4', placeholder: 'ls -l /workspace', spellcheck: 'false' });
  const button = el('button', { type: 'submit', id: 'run', text: 'Run' });
  const result = el('p', { id: 'run-result' });
  const out = el('pre', { id: 'run-output', class: 'output', hidden: '' });
  return el('div', { id: 'run-box' }, el('h2', { text: 'Run' }),
    el('form', { class: 'run', onsubmit: async e => {
      e.preventDefault();
      if (!code.value.trim()) { error.textContent = 'write a command or some code to run first'; return; }
      button.disabled = true;
      result.textContent = 'running…';
      result.className = '';
      out.textContent = '';
      out.hidden = true;
      // the output as it comes (stdout and stderr in the order they came), the page keeping its last 64 KiB
      let text = '';
      try {
        await apiLines(base + '/exec', { language: language.value, code: code.value }, m => {
          if (m.type === 'stdout' || m.type === 'stderr') {
            text = (text + m.data).slice(-65536);
            out.textContent = text;
            out.hidden = false;
          } else if (m.type === 'result') {
            result.textContent = `${m.endReason}, exit code ${m.exitCode ?? '—'}, ${m.durationMs} ms` + (m.truncated ? ' (output cut at its limit)' : '')
              + (m.message ? ': ' + m.message : '');
            result.className = m.exitCode === 0 ? 'ok' : 'error';
          }
        });
        error.textContent = '';
      } catch (err) { result.textContent = ''; error.textContent = err.message; }
      finally { button.disabled = false; }
    } }, language, code, button), result, out);
}

/**
 * The profile's preview ports, each with an "Open preview" button: it makes a preview link (a
 * capability URL that needs no cookie, docs/security-model.md) and opens it in a new tab without
 * an opener. Only the sandbox's owner may reach them; nothing when the profile names none.
 */
function previewPorts(s, error) {
  if (!s.ports?.length || s.owner !== session.client || !may('exec') || s.state !== 'running') return '';
  const links = el('ul', { id: 'preview-links' });
  const open = async port => {
    try {
      const link = await api('POST', `/v1/sandboxes/${encodeURIComponent(s.id)}/ports/${port}/link`, {});
      const a = el('a', { href: link.url, target: '_blank', rel: 'noopener noreferrer', class: 'preview-link', 'data-port': String(port),
        text: `Port ${port} (link valid until ${new Date(link.expiresAt).toLocaleTimeString()})` });
      links.replaceChildren(el('li', {}, a));
      a.click();
      error.textContent = '';
    } catch (e) { error.textContent = e.message; }
  };
  return el('div', { id: 'preview-ports' },
    el('h2', { text: 'Preview ports' }),
    el('p', { text: 'Web servers inside this sandbox, on the ports its profile names. A preview runs sandboxed: it cannot read this console.'
      + ' Its link reaches the port without signing in, for an hour or until the sandbox ends: share it only with whom may see it.' }),
    el('div', { class: 'actions' }, ...s.ports.flatMap(port => [el('button', { type: 'button', class: 'open-preview', id: 'open-preview-' + port,
      text: `Open preview of port ${port}`, onclick: () => open(port) }), ' '])),
    links);
}

async function sandbox(id) {
  const mine = generation;
  const base = '/v1/sandboxes/' + encodeURIComponent(id);
  // the sandbox with its processes and newest egress records: one request, at open and on each refresh
  const watching = base + '?include=processes,egress';
  let s = await api('GET', watching);
  const seen = new Map();
  const summary = el('p', { id: 'sandbox-summary' });
  let shownState = null;
  const showSummary = () => {
    summary.textContent = `${s.pausedToDisk ? 'paused to disk' : s.state} · owner ${s.owner} · profile ${s.profile} · ${s.isolation} · image ${s.image} · created ${age(s.createdAt)} ago`
      + ` · TTL left ${left(s.expiresAt)} · CPU ${cpu(s, seen)} · memory ${bytes(s.usage?.memoryBytes)}`;
    if (s.state !== shownState) { shownState = s.state; showActions(); }
  };
  const processes = el('tbody', { id: 'process-rows' });
  const files = el('tbody', { id: 'file-rows' });
  const egress = el('tbody', { id: 'egress-rows' });
  const dir = el('input', { id: 'dir', value: '/workspace' });
  const crumbs = el('nav', { id: 'file-crumbs', 'aria-label': 'directory' });
  const deleting = new Map(); // files whose Delete asks again
  const upload = el('input', { id: 'upload-file', type: 'file' });
  const error = el('p', { class: 'error', id: 'sandbox-error' });
  const outputTitle = el('h3', { id: 'output-title' });
  const output = el('pre', { id: 'process-output', class: 'output', hidden: '' });
  let watched = null; // the background process whose output is shown
  const actions = el('div', { class: 'actions', id: 'sandbox-actions' });
  const armed = new Map();
  const act = async (call) => {
    try { s = await call(); showSummary(); error.textContent = ''; } catch (e) { error.textContent = e.message; }
  };
  // the actions the client may take in the sandbox's state, drawn again as the state changes
  const showActions = () => {
    const own = s.owner === session.client;
    // the tiers that can save a sandbox's processes: gVisor, and the microVM for a guest of a stored image
    const savesMemory = x => x.isolation === 'gvisor' || (x.isolation === 'microvm' && x.image !== 'system');
    actions.replaceChildren(
      may('exec') && own && s.state === 'running' ? el('a', { href: '#terminal/' + encodeURIComponent(s.id), id: 'open-terminal', class: 'button', text: 'Terminal' }) : '',
      may('sandbox.extend') ? el('button', { type: 'button', id: 'extend', text: 'Extend +10 min', onclick: () => act(() => extend(s)) }) : '',
      may('sandbox.pause') && s.state === 'running' ? el('button', { type: 'button', id: 'pause', text: 'Pause',
        title: 'freeze every process of the sandbox; its lifetime keeps counting', onclick: () => act(() => api('POST', base + '/pause')) }) : '',
      may('sandbox.pause') && s.state === 'running' && savesMemory(s) ? el('button', { type: 'button', id: 'pause-to-disk',
        text: 'Pause to disk', title: 'save its processes with their memory to disk and stop them: it holds no memory until resumed',
        onclick: () => act(() => api('POST', base + '/pause', { toDisk: true })) }) : '',
      may('sandbox.pause') && s.state === 'paused' ? el('button', { type: 'button', id: 'resume', text: 'Resume',
        onclick: () => act(() => api('POST', base + '/resume')) }) : '',
      may('sandbox.snapshot') && own && s.state === 'running' ? el('button', { type: 'button', id: 'snapshot', text: 'Snapshot files',
        title: 'keep the files of /workspace and /tmp, to fork new sandboxes from', onclick: () => takeSnapshot({}) }) : '',
      may('sandbox.snapshot') && own && s.state === 'running' && savesMemory(s) ? el('button', { type: 'button',
        id: 'snapshot-memory', text: 'Snapshot with memory', title: 'keep its running processes with their memory too: forks go on from here',
        onclick: () => takeSnapshot({ memory: true }) }) : '',
      may('sandbox.destroy') ? destroyButton(s, armed, async () => { location.hash = 'sandboxes'; }, error) : '');
  };
  const snapshotRows = el('tbody', { id: 'snapshot-rows' });
  const showSnapshots = async () => {
    if (!may('sandbox.snapshot') || s.owner !== session.client) return;
    const list = (await api('GET', '/v1/snapshots')).snapshots.filter(x => x.sandbox === s.id);
    snapshotRows.replaceChildren(...list.map(x => el('tr', { 'data-id': x.id }, el('td', { class: 'mono', text: x.id }),
      el('td', { text: age(x.createdAt) + ' ago' }), el('td', { text: x.files + ' files' + (x.memory ? ' and its processes' : '') + ', ' + bytes(x.bytes) }),
      el('td', {}, may('sandbox.create') ? forkForm(x, error) : ''))));
    if (!list.length) snapshotRows.append(el('tr', {}, el('td', { colspan: '4', text: 'No snapshot of this sandbox.' })));
  };
  const takeSnapshot = async (body) => {
    try { await api('POST', base + '/snapshots', body); error.textContent = ''; await showSnapshots(); }
    catch (e) { error.textContent = e.message; }
  };
  page(mine, 'Sandbox ' + s.id, summary, actions,
    error,
    runForm(base, s, error),
    previewPorts(s, error),
    el('h2', { text: 'Processes' }),
    el('table', {}, el('thead', {}, el('tr', {}, ...['Id', 'State', 'Command', 'Started', 'Output', ''].map(h => el('th', { text: h })))), processes),
    outputTitle, output,
    el('h2', { text: 'Files' }),
    el('form', { class: 'filters', onsubmit: e => { e.preventDefault(); list(); } }, dir, el('button', { type: 'submit', text: 'List' })),
    crumbs,
    may('files.write') ? el('form', { class: 'filters', id: 'upload-form', onsubmit: e => { e.preventDefault(); send(); } },
      upload, el('button', { type: 'submit', id: 'upload', text: 'Upload to this directory' })) : '',
    el('table', {}, el('thead', {}, el('tr', {}, ...['Name', 'Type', 'Size', 'Modified', ''].map(h => el('th', { text: h })))), files),
    el('h2', { text: 'Egress' }),
    el('table', {}, el('thead', {}, el('tr', {}, ...['Start', 'Protocol', 'Destination', 'Port', 'Decision', 'Rule', 'Up', 'Down']
      .map(h => el('th', { text: h })))), egress),
    may('sandbox.snapshot') && s.owner === session.client ? el('h2', { text: 'Snapshots' }) : '',
    may('sandbox.snapshot') && s.owner === session.client
      ? el('table', {}, el('thead', {}, el('tr', {}, ...['Id', 'Taken', 'Holds', ''].map(h => el('th', { text: h })))), snapshotRows) : '');
  showSummary();
  showSnapshots().catch(e => { error.textContent = e.message; });
  const enter = path => { dir.value = path; list(); };
  // the directory shown: its parents as links (breadcrumbs), its entries (a directory opens, a file downloads)
  const list = async () => {
    try {
      const path = '/' + dir.value.split('/').filter(Boolean).join('/');
      const entries = (await api('GET', `${base}/files/list?path=${encodeURIComponent(path)}`)).entries
        .sort((a, b) => (a.type === 'directory') !== (b.type === 'directory') ? (a.type === 'directory' ? -1 : 1) : a.path.localeCompare(b.path));
      const parts = path.split('/').filter(Boolean);
      crumbs.replaceChildren(el('a', { href: '#', class: 'crumb', 'data-path': '/', text: '/', onclick: e => { e.preventDefault(); enter('/'); } }),
        ...parts.flatMap((part, i) => {
          const to = '/' + parts.slice(0, i + 1).join('/');
          return [i ? ' / ' : ' ', el('a', { href: '#', class: 'crumb', 'data-path': to, text: part, onclick: e => { e.preventDefault(); enter(to); } })];
        }));
      const name = f => f.path.slice(f.path.lastIndexOf('/') + 1);
      files.replaceChildren(...entries.map(f => el('tr', { 'data-path': f.path },
        el('td', { class: 'mono' }, f.type === 'directory'
          ? el('a', { href: '#', class: 'enter', text: name(f) + '/', onclick: e => { e.preventDefault(); enter(f.path); } })
          : name(f)),
        el('td', { text: f.type }), el('td', { text: f.type === 'file' ? bytes(f.size) : '' }),
        el('td', { text: when(f.modifiedAt), title: f.modifiedAt ?? '' }),
        el('td', {}, f.type === 'file' && s.owner === session.client ? el('a', { href: `${base}/files?path=${encodeURIComponent(f.path)}`,
          download: '', class: 'download', text: 'download' }) : '', ' ', runFileButton(f), ' ',
          may('files.write') && s.owner === session.client && f.type !== 'directory' ? confirmButton({ class: 'delete-file' }, 'Delete', 'Really delete?',
            deleting, f.path, async () => { await api('DELETE', `${base}/files?path=${encodeURIComponent(f.path)}`); await list(); }, error) : ''))));
      if (!entries.length) files.append(el('tr', {}, el('td', { colspan: '5', text: 'An empty directory.' })));
      dir.value = path;
      error.textContent = '';
    } catch (e) { error.textContent = e.message; }
  };
  const send = async () => {
    const file = upload.files[0];
    if (!file) { error.textContent = 'choose a file to upload first'; return; }
    const max = s.limits?.fileSizeBytes;
    if (max && file.size > max) { error.textContent = `${file.name} is ${bytes(file.size)}: this sandbox takes files up to ${bytes(max)}`; return; }
    try {
      await apiUpload(`${base}/files?path=${encodeURIComponent(dir.value.replace(/\/+$/, '') + '/' + file.name)}`, file);
      error.textContent = '';
      upload.value = '';
      await list();
    } catch (e) { error.textContent = e.message; }
  };
  const watch = async (poll) => {
    if (!watched) return;
    // the whole of it is kept within the sandbox's output limit; the page shows its last 64 KiB
    const text = await apiText(`${base}/processes/${encodeURIComponent(watched.id)}/stdout`, poll);
    output.textContent = text.length > 65536 ? '…' + text.slice(-65536) : text;
    output.hidden = false;
    outputTitle.textContent = `Output of ${watched.id} (${watched.state === 'running' ? 'live' : 'ended'})`;
  };
  const procs = p => {
    processes.replaceChildren(...p.map(x => el('tr', { 'data-id': x.id }, el('td', { class: 'mono', text: x.id }), el('td', { text: x.state ?? '' }),
      el('td', { class: 'mono', text: Array.isArray(x.command) ? x.command.join(' ') : (x.command ?? '') }), el('td', { text: when(x.startedAt), title: x.startedAt ?? '' }),
      el('td', { text: bytes(x.stdoutBytes) + ' / ' + bytes(x.stderrBytes) }),
      el('td', {}, s.owner === session.client ? el('button', { type: 'button', class: 'show-output', text: 'Show output',
        onclick: () => { watched = x; watch().catch(e => { error.textContent = e.message; }); } }) : ''))));
    if (watched) watched = p.find(x => x.id === watched.id) || watched;
  };
  const egressRecords = r => {
    egress.replaceChildren(...r.reverse().map(x => el('tr', {}, el('td', { text: when(x.start), title: x.start ?? '' }), el('td', { text: x.protocol }),
      el('td', { class: 'mono', text: x.destination ?? x.address ?? '' }), el('td', { text: x.port }),
      el('td', { class: x.allowed ? 'ok' : 'error', text: x.allowed ? 'allowed' : 'refused' }), el('td', { class: 'mono', text: x.rule ?? '' }),
      el('td', { text: bytes(x.bytesUp) }), el('td', { text: bytes(x.bytesDown) }))));
    if (!r.length) egress.append(el('tr', {}, el('td', { colspan: '8', text: 'No connection attempts.' })));
  };
  // the page's refresh: its reads are marked as polls (folded on the audit log)
  const tick = async () => {
    s = await api('GET', watching, undefined, true);
    showSummary();
    procs(s.processes);
    egressRecords(s.egress);
    await watch(true);
  };
  procs(s.processes);
  egressRecords(s.egress);
  await list();
  poll(mine, () => tick().catch(() => {}), 1000);
}

function approvals() {
  const mine = generation;
  const error = el('p', { class: 'error', id: 'approvals-error' });
  const body = el('tbody', { id: 'approval-rows' });
  const status = el('p', { id: 'approvals-status', text: 'connecting…' });
  page(mine, 'Approvals', status, error,
    el('table', {}, el('thead', {}, el('tr', {}, ...['Asked', 'Client', 'Sandbox', 'Rule', 'Waiting', 'Reason', ''].map(h => el('th', { text: h })))), body));
  events = new EventSource('/v1/approvals/events');
  events.addEventListener('open', () => { status.textContent = 'live: new requests appear here as they come'; });
  events.addEventListener('error', () => { status.textContent = 'reconnecting…'; });
  events.addEventListener('approvals', ev => {
    const list = JSON.parse(ev.data).approvals;
    document.getElementById('pending-badge').textContent = list.length || '';
    body.replaceChildren(...list.map(a => {
      const reason = el('input', { class: 'reason', placeholder: 'reason' });
      const decide = verb => async () => {
        try { await api('POST', `/v1/approvals/${encodeURIComponent(a.id)}/${verb}`, { reason: reason.value || undefined }); error.textContent = ''; }
        catch (e) { error.textContent = e.message; }
      };
      return el('tr', { 'data-id': a.id }, el('td', { text: a.summary }), el('td', { text: a.client }), el('td', { class: 'mono', text: a.sandbox ?? '' }),
        el('td', { class: 'mono', text: a.rule }), el('td', { text: age(a.requestedAt) }), el('td', {}, reason),
        el('td', {}, el('button', { type: 'button', class: 'approve', text: 'Approve', onclick: decide('approve') }), ' ',
          el('button', { type: 'button', class: 'deny', text: 'Deny', onclick: decide('deny') })));
    }));
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: '7', text: 'Nothing waits for a decision.' })));
  });
}

async function audit() {
  const mine = generation;
  const field = (id, placeholder) => el('input', { id, placeholder });
  const sandboxF = field('audit-sandbox', 'sandbox'), clientF = field('audit-client', 'client'), kindF = field('audit-kind', 'kind');
  const textF = field('audit-text', 'text in the record');
  const sinceF = el('input', { id: 'audit-since', type: 'datetime-local', step: '1', title: 'from (local time)' });
  const untilF = el('input', { id: 'audit-until', type: 'datetime-local', step: '1', title: 'until (local time)' });
  const verdict = el('p', { id: 'audit-verdict', text: 'checking the chain…' });
  const error = el('p', { class: 'error', id: 'audit-error' });
  const body = el('tbody', { id: 'audit-rows' });
  const exportLink = el('a', { id: 'audit-export', download: 'airlock-audit.jsonl', text: 'Export as JSON lines' });
  const query = () => {
    const q = new URLSearchParams();
    if (sandboxF.value.trim()) q.set('sandbox', sandboxF.value.trim());
    if (clientF.value.trim()) q.set('client', clientF.value.trim());
    if (kindF.value.trim()) q.set('kind', kindF.value.trim());
    if (textF.value) q.set('q', textF.value);
    if (sinceF.value) q.set('since', new Date(sinceF.value).toISOString());
    if (untilF.value) q.set('until', new Date(untilF.value).toISOString());
    return q;
  };
  const older = el('button', { type: 'button', id: 'audit-older', text: 'Older records', hidden: '' });
  let asked = 0; // only the answer to the latest filter is shown, however the answers arrive
  let next = null; // the seq of the page's oldest record, while there are older ones
  const row = r => el('tr', { 'data-seq': r.seq }, el('td', { text: r.seq }),
    el('td', { class: 'mono', text: when(r.time), title: r.time }), el('td', { text: r.kind }), el('td', { text: r.actor ?? '' }),
    el('td', { class: 'mono', text: r.sandbox ?? '' }), el('td', { class: 'mono' }, detail(r.detail)));
  // the newest page (more: the page before the oldest shown, added below it)
  const load = async (more) => {
    const ask = ++asked;
    try {
      const q = query();
      if (more) q.set('before', next);
      const answer = await api('GET', '/v1/audit?' + q);
      if (ask !== asked) return;
      if (!more) {
        const exported = query();
        exported.set('format', 'jsonl');
        exportLink.href = '/v1/audit?' + exported;
      }
      const rows = answer.records.reverse().map(row);
      if (more) body.append(...rows); else body.replaceChildren(...rows);
      next = answer.next;
      older.hidden = next == null;
      error.textContent = '';
    } catch (e) { error.textContent = e.message; }
  };
  older.addEventListener('click', () => load(true));
  page(mine, 'Audit', el('form', { class: 'filters', id: 'audit-filters', onsubmit: e => { e.preventDefault(); load(); } },
    sandboxF, clientF, kindF, textF, el('label', { text: 'from ' }, sinceF), el('label', { text: 'until ' }, untilF), el('button', { type: 'submit', id: 'audit-apply', text: 'Filter' })),
  verdict, exportLink, error,
  el('table', {}, el('thead', {}, el('tr', {}, ...['Seq', 'Time', 'Kind', 'Actor', 'Sandbox', 'Detail'].map(h => el('th', { text: h })))), body),
  older);
  api('GET', '/v1/audit/verify').then(v => {
    verdict.textContent = v.ok ? `Chain verified: ${v.records} records intact` : `Chain BROKEN at seq ${v.brokenSeq}: ${v.problem}`;
    verdict.className = v.ok ? 'ok' : 'error';
  }).catch(e => { verdict.textContent = e.message; verdict.className = 'error'; });
  await load();
}

// The Terminal page: an interactive shell in a sandbox, on a PTY (POST .../exec with "tty": true)
// attached over the WebSocket .../processes/{pid}/attach, which the session cookie authenticates.
// xterm.js draws it: what the program prints goes to xterm.js as bytes and is never made HTML.
// The page holds nothing unbounded: xterm.js keeps a fixed scrollback, the socket a message at a time.

const SCROLLBACK = 2000;     // lines xterm.js keeps
let shell = null;            // {close()} of the terminal shown

// xterm.js writes its sizes and colours into <style> elements it makes itself. The page's CSP
// applies a <style> only with this response's nonce (on the style sheet's link in index.html):
// stamped here on each as it is made, before it is inserted, which is when the browser checks it.
const STYLE_NONCE = document.querySelector('link[nonce]')?.nonce ?? '';
const makeElement = Document.prototype.createElement;
Document.prototype.createElement = function (name, options) {
  const e = makeElement.call(this, name, options);
  if (STYLE_NONCE && String(name).toLowerCase() === 'style') e.setAttribute('nonce', STYLE_NONCE);
  return e;
};

async function terminal(id) {
  const mine = generation;
  if (!id) return terminalPicker();
  const { Terminal } = await import('/console/xterm.js');
  const { FitAddon } = await import('/console/addon-fit.js');
  const s = await api('GET', '/v1/sandboxes/' + encodeURIComponent(id));
  const status = el('p', { id: 'terminal-status', text: 'starting a shell…' });
  const box = el('div', { id: 'terminal' });
  page(mine, 'Terminal ' + s.id, status, box);
  const term = new Terminal({ scrollback: SCROLLBACK, cursorBlink: true, fontFamily: 'ui-monospace, monospace', fontSize: 14 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  let socket = null, pid = null, ended = false, closed = false, keepAlive = null;
  const onResize = () => fit.fit();
  window.addEventListener('resize', onResize);
  shell = {
    close() {
      closed = true;
      window.removeEventListener('resize', onResize);
      if (socket) socket.close(1000);
      // the shell would run on detached until its timeout: leaving the page ends it
      if (pid && !ended) api('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}/processes/${encodeURIComponent(pid)}`).catch(() => {});
      term.dispose();
    }
  };
  // bash if the image has it, else sh; interactive either way. It starts at the first line the page
  // sends once attached, so that its first prompt is not printed before anyone watches.
  const request = { command: ['/bin/sh', '-c', 'read -r _; if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'],
    background: true, tty: true, rows: term.rows, cols: term.cols };
  // a background process lives as long as its sandbox unless it asks for less: the shell asks for nothing
  const p = await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/exec`, request);
  pid = p.id;
  if (closed) { // the page was left while the shell started
    api('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}/processes/${encodeURIComponent(pid)}`).catch(() => {});
    return;
  }
  const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  socket = new WebSocket(`${scheme}${location.host}/v1/sandboxes/${encodeURIComponent(id)}/processes/${encodeURIComponent(pid)}/attach?csrf=${encodeURIComponent(session.csrf)}`);
  socket.binaryType = 'arraybuffer';
  const encoder = new TextEncoder();
  socket.addEventListener('open', () => {
    status.textContent = `shell ${pid} in ${id}: Ctrl-D or exit ends it; leaving the page ends it too`;
    socket.send(JSON.stringify({ type: 'resize', rows: term.rows, cols: term.cols }));
    socket.send(encoder.encode('\r')); // the go of the shell (above)
    term.focus();
    // the server closes a socket silent for ten minutes: a quiet shell stays attached
    keepAlive = setInterval(() => { if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'ping' })); }, 60000);
  });
  socket.addEventListener('message', ev => {
    if (typeof ev.data !== 'string') { term.write(new Uint8Array(ev.data)); return; }
    const m = JSON.parse(ev.data);
    if (m.type === 'dropped') {
      term.write(`\r\n[${m.bytes} bytes of output dropped: the page fell behind]\r\n`);
    } else if (m.type === 'exit') {
      ended = true;
      const code = m.exitCode ?? m.endReason ?? '?';
      term.write(`\r\n[process exited ${code}]\r\n`);
      status.textContent = `the shell ended (${m.endReason ?? 'exited'}, exit code ${m.exitCode ?? '—'})`;
    }
  });
  socket.addEventListener('close', ev => {
    clearInterval(keepAlive);
    if (!ended) status.textContent = `disconnected (${ev.code}${ev.reason ? ': ' + ev.reason : ''})`;
  });
  term.onData(d => { if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(d)); });
  term.onBinary(d => { if (socket.readyState === WebSocket.OPEN) socket.send(Uint8Array.from(d, c => c.charCodeAt(0) & 0xff)); });
  term.onResize(({ rows, cols }) => { if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'resize', rows, cols })); });
}

async function terminalPicker() {
  const mine = generation;
  const pick = el('select', { id: 'terminal-sandbox' });
  const error = el('p', { class: 'error', id: 'terminal-error' });
  page(mine, 'Terminal', el('p', { text: 'An interactive shell in one of your sandboxes.' }),
    el('form', { class: 'filters', onsubmit: e => { e.preventDefault(); if (pick.value) location.hash = 'terminal/' + encodeURIComponent(pick.value); } },
      pick, el('button', { type: 'submit', id: 'terminal-open', text: 'Open terminal' })), error);
  const list = (await api('GET', '/v1/sandboxes')).sandboxes.filter(x => x.state === 'running');
  pick.replaceChildren(...list.map(x => el('option', { value: x.id, text: `${x.id} (${x.image})` })));
  if (!list.length) error.textContent = 'No running sandbox to open a terminal in.';
}

// --- navigation and sign-in ---

async function route() {
  const mine = ++generation;
  stop();
  if (events) { events.close(); events = null; }
  if (shell) { shell.close(); shell = null; }
  if (!session) return;
  const [name, arg] = (location.hash.slice(1) || 'overview').split('/');
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  try {
    switch (name) {
      case 'sandboxes': await sandboxes(); break;
      case 'sandbox': await sandbox(decodeURIComponent(arg)); break;
      case 'approvals': approvals(); break;
      case 'audit': await audit(); break;
      case 'terminal': await terminal(arg && decodeURIComponent(arg)); break;
      default: await overview();
    }
  } catch (e) {
    if (e instanceof Stale) return; // left meanwhile: the page now shown is another's
    if (session && mine === generation) page(mine, 'Error', el('p', { class: 'error', id: 'page-error', text: e.message }));
  }
}

function showSignIn(message) {
  session = null;
  generation++; // a page still loading draws nothing over the sign-in
  stop();
  if (events) { events.close(); events = null; }
  if (shell) { shell.close(); shell = null; }
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('page').hidden = true;
  document.getElementById('whoami').textContent = '';
  document.getElementById('signin').hidden = false;
  document.getElementById('signin-error').textContent = message || '';
}

function signedIn(s) {
  session = s;
  document.getElementById('signin').hidden = true;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  document.getElementById('whoami').textContent = 'signed in as ' + s.client;
  route();
}

document.getElementById('signin-form').addEventListener('submit', async e => {
  e.preventDefault();
  const token = document.getElementById('token');
  // a fresh sign-in token (with its cookie): the server takes a sign-in only with it, which no other origin can read
  const probe = await fetch('/console/session', { credentials: 'same-origin' });
  const state = await probe.json().catch(() => ({}));
  if (probe.ok) { token.value = ''; signedIn(state); return; }
  const r = await fetch('/console/session', { method: 'POST', headers: { 'Content-Type': 'application/json', [CSRF_HEADER]: state.signInToken || '' },
    credentials: 'same-origin', body: JSON.stringify({ token: token.value }) });
  const json = await r.json().catch(() => ({}));
  token.value = '';
  if (!r.ok) { document.getElementById('signin-error').textContent = json.error?.message || ('HTTP ' + r.status); return; }
  signedIn(json);
});

document.getElementById('signout').addEventListener('click', async () => {
  await fetch('/console/session', { method: 'DELETE', headers: { [CSRF_HEADER]: session.csrf }, credentials: 'same-origin' });
  showSignIn('Signed out.');
});

window.addEventListener('hashchange', route);

fetch('/console/session', { credentials: 'same-origin' }).then(async r => {
  if (r.ok) signedIn(await r.json());
  else showSignIn();
});
