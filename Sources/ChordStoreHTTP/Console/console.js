// ChordStore console: a page over the server's JSON calls (docs/PROTOCOL.md, "JSON over
// HTTP"). Hand-written, no framework and no build step.
'use strict';

const API = '/api/chordstore.v1.ChordStore/';
const EVENT_FIELDS = new Set(['sequence', 'epoch', 'timestamp', 'session', 'command_id']);

const state = {
  token: sessionStorage.getItem('chordstore.token') || '',
  store: sessionStorage.getItem('chordstore.store') || '',
  // Undo and redo revert this session's changes: one per browser tab.
  session: sessionStorage.getItem('chordstore.session') || ('console-' + crypto.randomUUID()),
  admin: false,
  lastSequence: 0,
  asOf: null,          // a sequence while the timeline looks at the past
  chordsets: [],
  editing: null,       // the chord being edited
  feed: null,          // the AbortController of the change feed
  refreshTimer: null,
};
sessionStorage.setItem('chordstore.session', state.session);

const $ = (id) => document.getElementById(id);

function headers() {
  const h = { 'Content-Type': 'application/json', 'ChordStore-Store': state.store, 'ChordStore-Session': state.session };
  if (state.token) h['Authorization'] = 'Bearer ' + state.token;
  return h;
}

class CallError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

/** One unary call: the request message in JSON, the reply message back. */
async function call(method, body = {}) {
  const response = await fetch(API + method, { method: 'POST', headers: headers(), body: JSON.stringify(body) });
  const reply = await response.json().catch(() => ({ code: 'UNKNOWN', message: 'HTTP ' + response.status }));
  if (!response.ok) throw new CallError(reply.code, reply.message);
  return reply;
}

/** A server stream read as server-sent events: onMessage per message; resolves at its end. */
async function stream(method, body, onMessage, signal) {
  const response = await fetch(API + method, { method: 'POST', headers: headers(), body: JSON.stringify(body), signal });
  if (!response.ok) {
    const reply = await response.json().catch(() => ({ code: 'UNKNOWN', message: 'HTTP ' + response.status }));
    throw new CallError(reply.code, reply.message);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new CallError('UNAVAILABLE', 'the stream ended without a status');
    text += value;
    let end;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (data === '') continue;  // a comment (": keep-alive")
      const parsed = JSON.parse(data);
      if (event === 'message') onMessage(parsed);
      else if (event === 'end') return;
      else throw new CallError(parsed.code, parsed.message);
    }
  }
}

function say(text, ok = false) {
  $('message').textContent = text;
  $('message').className = ok ? 'ok' : '';
}

function fail(error) {
  say((error.code ? error.code + ': ' : '') + error.message);
  if (error.code === 'UNAUTHENTICATED') signOut();
}

// --- Colours and ids ---------------------------------------------------------------

/** A chord colour (hue, purity = saturation, brightness, alpha; each 0...1) as [r, g, b, a]. */
function rgba(color = {}) {
  const h = color.hue || 0, s = color.purity || 0, v = color.brightness || 0;
  const a = color.alpha === undefined ? 0 : color.alpha;
  const i = Math.floor(h * 6) % 6, f = h * 6 - Math.floor(h * 6);
  const p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
  const [r, g, b] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i];
  return [Math.round(r * 255), Math.round(g * 255), Math.round(b * 255), a];
}

function cssColor(color) {
  const [r, g, b, a] = rgba(color);
  return `rgba(${r}, ${g}, ${b}, ${a})`;
}

function hexColor(color) {
  return '#' + rgba(color).slice(0, 3).map((c) => c.toString(16).padStart(2, '0')).join('');
}

/** '#rrggbb' as hue, purity and brightness. */
function hsb(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const max = Math.max(r, g, b), d = max - Math.min(r, g, b);
  let h = 0;
  if (d > 0) {
    if (max === r) h = ((g - b) / d + 6) % 6;
    else if (max === g) h = (b - r) / d + 2;
    else h = (r - g) / d + 4;
  }
  return { hue: h / 6, purity: max === 0 ? 0 : d / max, brightness: max };
}

/** A 16-byte id (base64 in JSON) as a UUID string. */
function uuid(base64) {
  const hex = Array.from(atob(base64 || ''), (c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-').toUpperCase();
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// --- Views -------------------------------------------------------------------------

function show(view) {
  for (const id of ['login', 'stores', 'store', 'cluster']) $(id).hidden = id !== view;
  for (const button of $('nav').querySelectorAll('button')) button.classList.toggle('current', button.dataset.view === view);
  $('nav').hidden = view === 'login';
  $('nav-stores').hidden = !state.admin;
  $('logout').hidden = view === 'login';
  $('where').textContent = view === 'login' ? '' : 'store ' + state.store;
  if (view === 'stores') loadStores().catch(fail);
  if (view === 'store') openStore().catch(fail);
  if (view === 'cluster') loadCluster().catch(fail);
}

async function signIn(token, store) {
  state.token = token;
  state.store = store || 'default';
  await call('GetProfile');  // proves the token may read the store
  try {
    await call('ListStores', { page_size: 1 });
    state.admin = true;
  } catch (error) {
    if (error.code !== 'PERMISSION_DENIED') throw error;
    state.admin = false;
  }
  sessionStorage.setItem('chordstore.token', state.token);
  sessionStorage.setItem('chordstore.store', state.store);
  say('');
  show('store');
}

function signOut() {
  stopFeed();
  state.token = '';
  sessionStorage.removeItem('chordstore.token');
  show('login');
}

async function loadStores() {
  const body = $('store-table').querySelector('tbody');
  const rows = [];
  let token = '';
  do {
    const page = await call('ListStores', { page_size: 100, page_token: token });
    for (const info of page.stores || []) {
      const row = element('tr');
      const name = element('td');
      const link = element('a', '', info.name);
      link.addEventListener('click', () => { state.store = info.name; sessionStorage.setItem('chordstore.store', info.name); show('store'); });
      name.append(link);
      row.append(name, element('td', '', info.chordsets || '0'), element('td', '', info.head_sequence || '0'),
        element('td', '', info.created ? new Date(info.created).toLocaleString() : ''));
      rows.push(row);
    }
    token = page.next_page_token || '';
  } while (token);
  body.replaceChildren(...rows);
}

async function loadCluster() {
  const status = await call('GetNodeStatus');
  const facts = [['Node', status.node], ['Address', status.address], ['Role', status.role], ['Epoch', status.epoch || '0'],
    ['Leader', status.leader], ['Members', status.members || 1], ['Last event', status.last_sequence || '0'],
    ['On a majority', status.quorum_sequence || '0'], ['Replication', status.replication || '']];
  $('node').replaceChildren(...facts.flatMap(([k, v]) => [element('dt', '', k), element('dd', '', String(v ?? ''))]));
  $('followers').querySelector('tbody').replaceChildren(...(status.followers || []).map((f) => {
    const row = element('tr');
    row.append(...[f.node, f.address, f.acked_sequence || '0', f.lag_events || '0', f.lag_millis || '0', f.streaming ? 'yes' : 'no']
      .map((v) => element('td', '', String(v))));
    return row;
  }));
}

// --- A store: chordsets, timeline, feed ----------------------------------------------

async function openStore() {
  stopFeed();
  state.asOf = null;
  const profile = await call('GetProfile');
  state.lastSequence = Number(profile.last_sequence || 0);
  await Promise.all([refresh(), loadEvents()]);
  updateTimeline();
  startFeed();
}

async function refresh() {
  if (state.asOf !== null) {
    const reply = await call('ReadAsOf', { as_of: { sequence: String(state.asOf) }, list: {} });
    state.chordsets = (reply.list && reply.list.chordsets) || [];
  } else {
    const [list, profile] = await Promise.all([call('ListChordsets'), call('GetProfile')]);
    state.chordsets = list.chordsets || [];
    $('profile').textContent = `${profile.chordsets || 0} chordsets, ${profile.chords || 0} chords, ${profile.last_sequence || 0} events`;
  }
  render();
}

function scheduleRefresh() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(() => refresh().catch(fail), 50);
}

function render() {
  document.body.classList.toggle('asof', state.asOf !== null);
  const past = state.asOf !== null;
  $('chordsets').replaceChildren(...state.chordsets.map((chordset) => {
    const row = element('div', 'chordset');
    row.dataset.id = uuid(chordset.id);
    const title = element('div', 'title', chordset.title || '');
    title.title = 'Click to rename';
    title.append(element('span', 'created', new Date(chordset.creation_date).toLocaleString()));
    if (!past) title.addEventListener('click', () => rename(chordset));
    const swatches = element('div', 'swatches');
    for (const chord of chordset.chords || []) {
      const cell = element('div', 'chord');
      const swatch = element('div', 'swatch');
      swatch.dataset.chord = uuid(chord.id);
      swatch.style.backgroundColor = cssColor(chord.color);
      swatch.title = `position ${chord.position || 0}: hue ${(chord.color?.hue || 0).toFixed(3)}, purity ${(chord.color?.purity || 0).toFixed(3)}, brightness ${(chord.color?.brightness || 0).toFixed(3)}, alpha ${(chord.color?.alpha ?? 0).toFixed(2)}`;
      if (!past) swatch.addEventListener('click', () => edit(chord));
      cell.append(swatch, element('span', 'bpm', `${chord.bpm || 0} bpm`));
      swatches.append(cell);
    }
    const remove = element('button', 'delete', 'Delete');
    remove.type = 'button';
    remove.disabled = past;
    remove.addEventListener('click', () => {
      if (confirm(`Delete "${chordset.title}" and its eight chords?`)) command('DeleteChordset', { chordset_id: chordset.id });
    });
    row.append(element('div', 'index', String(chordset.index || 0)), title, swatches, remove);
    return row;
  }));
  for (const id of ['add-title', 'undo', 'redo']) $(id).disabled = past;
  $('add-form').querySelector('button').disabled = past;
}

/** A command under this tab's session; the feed brings its effect. */
async function command(method, request) {
  try {
    const reply = await call(method, request);
    say(`${method}: event ${reply.event?.sequence || ''}`, true);
    scheduleRefresh();
  } catch (error) {
    fail(error);
  }
}

function rename(chordset) {
  const title = prompt('New title', chordset.title || '');
  if (title !== null && title !== chordset.title) command('RenameChordset', { chordset_id: chordset.id, title });
}

function edit(chord) {
  state.editing = chord;
  $('editor').hidden = false;
  $('editor-chord').textContent = `${(chord.position || 0) + 1} (${uuid(chord.id)})`;
  $('editor-color').value = hexColor(chord.color);
  $('editor-alpha').value = chord.color?.alpha ?? 0;
  $('editor-bpm').value = chord.bpm || 120;
}

async function saveChord(event) {
  event.preventDefault();
  const chord = state.editing;
  if (!chord) return;
  const picked = $('editor-color').value;
  const alpha = Number($('editor-alpha').value);
  const bpm = Number($('editor-bpm').value);
  $('editor').hidden = true;
  state.editing = null;
  // The picker holds 8 bits a channel: keep the chord's own hue, purity and brightness
  // unless another colour was picked, so that a change of alpha alone changes only alpha.
  const old = chord.color || {};
  const color = picked === hexColor(old)
    ? { hue: old.hue || 0, purity: old.purity || 0, brightness: old.brightness || 0, alpha }
    : { ...hsb(picked), alpha };
  if (picked !== hexColor(old) || alpha !== (old.alpha ?? 0)) {
    await command('SetChordColor', { chord_id: chord.id, color });
  }
  if (bpm !== (chord.bpm || 0)) await command('SetChordBpm', { chord_id: chord.id, bpm });
}

async function loadEvents() {
  const from = Math.max(1, state.lastSequence - 49);
  const events = [];
  if (state.lastSequence > 0) await stream('ReadLog', { from_sequence: String(from), limit: '50' }, (e) => events.push(e));
  $('events').replaceChildren(...events.reverse().map(eventItem));
}

function eventItem(envelope) {
  const kind = Object.keys(envelope).find((key) => !EVENT_FIELDS.has(key)) || 'event';
  const body = envelope[kind] || {};
  const title = body.title || (body.chordset && body.chordset.title);
  const detail = title ? ` "${title}"` : '';
  const item = element('li', '', `#${envelope.sequence} ${new Date(envelope.timestamp).toLocaleTimeString()} ${kind}${detail} (${envelope.session || ''})`);
  item.value = Number(envelope.sequence);
  return item;
}

function updateTimeline() {
  const slider = $('asof');
  slider.max = String(state.lastSequence);
  if (state.asOf === null) slider.value = String(state.lastSequence);
  $('asof-label').textContent = state.asOf === null ? `now (event ${state.lastSequence})` : `as of event ${state.asOf}`;
  $('now').hidden = state.asOf === null;
}

function moveTimeline() {
  const value = Number($('asof').value);
  state.asOf = value >= state.lastSequence ? null : value;
  updateTimeline();
  refresh().catch(fail);
}

/** Follows the store's change feed from the event after the last one seen; reconnects. */
function startFeed() {
  const controller = new AbortController();
  state.feed = controller;
  let delay = 500;
  const run = async () => {
    while (!controller.signal.aborted) {
      try {
        $('live').className = 'live on';
        $('live').textContent = 'live';
        await stream('Subscribe', { from_sequence: String(state.lastSequence + 1) }, (envelope) => {
          delay = 500;
          state.lastSequence = Math.max(state.lastSequence, Number(envelope.sequence));
          $('events').prepend(eventItem(envelope));
          while ($('events').children.length > 200) $('events').lastChild.remove();
          updateTimeline();
          if (state.asOf === null) scheduleRefresh();
        }, controller.signal);
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error.code === 'UNAUTHENTICATED' || error.code === 'PERMISSION_DENIED') return fail(error);
      }
      $('live').className = 'live off';
      $('live').textContent = 'reconnecting';
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  run();
}

function stopFeed() {
  if (state.feed) state.feed.abort();
  state.feed = null;
  $('live').className = 'live off';
  $('live').textContent = 'offline';
}

// --- Wiring --------------------------------------------------------------------------

function start() {
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    signIn($('login-token').value.trim(), $('login-store').value.trim()).catch(fail);
  });
  $('logout').addEventListener('click', signOut);
  for (const button of $('nav').querySelectorAll('button')) button.addEventListener('click', () => show(button.dataset.view));
  $('add-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const title = $('add-title').value;
    $('add-title').value = '';
    command('AddChordset', { title });
  });
  $('undo').addEventListener('click', () => command('Undo', {}));
  $('redo').addEventListener('click', () => command('Redo', {}));
  $('asof').addEventListener('input', moveTimeline);
  $('now').addEventListener('click', () => { $('asof').value = $('asof').max; moveTimeline(); });
  $('editor').addEventListener('submit', saveChord);
  $('editor-cancel').addEventListener('click', () => { $('editor').hidden = true; state.editing = null; });

  // A link may carry the credentials in its fragment (never sent to a server):
  // #token=…&store=…. They only fill the form, which the user signs in with: a link
  // cannot sign anybody in to a store of its maker's choosing. The page forgets the
  // fragment once read.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has('token') || fragment.has('store')) {
    history.replaceState(null, '', location.pathname);
    $('login-token').value = fragment.get('token') || '';
    $('login-store').value = fragment.get('store') || 'default';
    say(`The link filled in a token for store "${$('login-store').value}": sign in if you expected it.`, true);
    show('login');
  } else if (state.token || state.store) {
    signIn(state.token, state.store).catch((error) => { fail(error); show('login'); });
  } else {
    show('login');
  }
}

start();
