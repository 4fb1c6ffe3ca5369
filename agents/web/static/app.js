// The web app's page: the lobby and a table. The server is the only authority: this page
// shows the views it sends (GET /api/tables/ID?since=V answers when the table moves on) and
// posts the person's choices; the tiles, seats and ledger are drawn by the shared table.js
// (ZT), the same code as the replay viewer's.
'use strict';
const $ = (id) => document.getElementById(id);
const el = ZT.el;
let CONFIG = null;
let V = null; // the table view shown
let tableId = null;
let selected = -1; // index of the selected tile in the person's hand (arrow keys)
let polling = 0; // generation of the poll loop: a new table stops the old loop

function message(text) {
  $('message').textContent = text || '';
  $('message').hidden = !text;
}

async function api(method, path, body) {
  const opts = {method, headers: {}};
  if (body !== undefined) {
    opts.headers['content-type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

// ------------------------------------------------------------------------------- lobby
function options(select, values, labels) {
  select.replaceChildren();
  values.forEach((v, j) => {
    const o = el('option', '', labels ? labels[j] : String(v));
    o.value = v === null ? '' : String(v);
    select.append(o);
  });
}

function seatChoices() {
  const n = Number($('players').value);
  const prev = $('your-seat').value;
  options($('your-seat'), [...Array(n).keys(), 'watch'],
    [...[...Array(n).keys()].map((s) => 'P' + s), 'none: watch']);
  $('your-seat').value = prev && (prev === 'watch' || Number(prev) < n) ? prev : '0';
  const box = $('seat-agents');
  const keep = [...box.querySelectorAll('select')].map((s) => s.value);
  box.replaceChildren();
  for (let s = 0; s < n; s++) {
    const label = el('label', '', 'P' + s + ' agent ');
    const sel = el('select');
    sel.id = 'agent-' + s;
    options(sel, CONFIG.agents);
    sel.value = keep[s] || (CONFIG.agents.includes('rule') ? 'rule' : CONFIG.agents[0]);
    label.append(sel);
    box.append(label);
  }
  mineChanged();
}

function mineChanged() {
  const watch = $('your-seat').value === 'watch';
  for (const sel of $('seat-agents').querySelectorAll('select')) {
    sel.parentElement.hidden = !watch && sel.id === 'agent-' + $('your-seat').value;  // yours
  }
  $('open').disabled = !watch;
  $('hint').disabled = watch;
}

function parseOverrides(text) {
  const out = {};
  text.split('\n').map((l) => l.trim()).filter((l) => l).forEach((line) => {
    const i = line.indexOf('=');
    if (i < 0) throw new Error('override ' + JSON.stringify(line) + ': expected SWITCH=VALUE');
    const name = line.slice(0, i).trim();
    const raw = line.slice(i + 1).trim();
    let value;
    try { value = JSON.parse(raw); } catch (e) { value = raw; }
    out[name] = value;
  });
  return out;
}

async function createTable(ev) {
  ev.preventDefault();
  message('');
  try {
    const n = Number($('players').value);
    const overrides = parseOverrides($('overrides').value);
    if (n !== 4) overrides.num_players = n;
    const mine = $('your-seat').value;
    const seats = [];
    for (let s = 0; s < n; s++) seats.push(String(s) === mine ? null : $('agent-' + s).value);
    const body = {rules: {preset: $('preset').value, overrides}, seats,
      seed: $('seed').value === '' ? null : Number($('seed').value)};
    if (mine === 'watch') body.open = $('open').checked;
    else if ($('hint').value) body.hint = $('hint').value;
    const view = await api('POST', '/api/tables', body);
    location.hash = 'table=' + view.id;
  } catch (e) {
    message(e.message);
  }
}

async function showLobby() {
  polling++;
  tableId = null;
  $('game').hidden = true;
  $('lobby').hidden = false;
  $('where').textContent = 'lobby';
  const tables = await api('GET', '/api/tables');
  const t = $('tables');
  t.replaceChildren();
  if (!tables.length) t.append(el('tr', '', 'none yet'));
  tables.forEach((x) => {
    const tr = el('tr');
    const a = el('a', '', 'open');
    a.href = '#table=' + x.id;
    [x.preset, x.names.join(', '), x.hands + ' hands played', x.status].forEach((c) =>
      tr.append(el('td', '', c)));
    const td = el('td');
    td.append(a);
    tr.append(td);
    t.append(tr);
  });
}

// ------------------------------------------------------------------------------- table
function seatName(s) {
  return V.names[s];
}

async function poll(gen) {
  while (gen === polling) {
    try {
      const since = V && V.id === tableId ? V.version : 0;
      const view = await api('GET', '/api/tables/' + tableId + '?since=' + since);
      if (gen !== polling) return;
      render(view);
    } catch (e) {
      if (gen !== polling) return;
      message(e.message);
      if (/no table|ended/.test(e.message)) return;
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

function showTable(id) {
  tableId = id;
  V = null;
  selected = -1;
  $('lobby').hidden = true;
  $('game').hidden = false;
  $('where').textContent = 'table ' + id.slice(0, 6);
  const gen = ++polling;
  poll(gen);
}

async function send(action) {
  message('');
  try {
    render(await api('POST', '/api/tables/' + tableId + '/action', {version: V.version, action}));
  } catch (e) {
    message(e.message);
  }
}

async function control(command, extra) {
  message('');
  try {
    render(await api('POST', '/api/tables/' + tableId + '/control', {command, ...extra}));
  } catch (e) {
    message(e.message);
  }
}

function legalDiscards() {
  return V.legal.filter((l) => l.text.startsWith('discard '));
}

function discard(code) {
  const a = legalDiscards().find((l) => l.text === 'discard ' + code);
  if (a) send(a.action);
  else if (V.legal.length) message('discarding ' + code + ' is not legal now');
}

function handTiles() {
  return [...document.querySelectorAll('#seat-' + V.seat + ' .hand .tile.clickable')];
}

function render(view) {
  if (V && view.version < V.version && view.id === V.id) return; // an older answer
  V = view;
  const over = view.settlement;
  const n = view.num_players;
  const summary = [view.rules.preset + ', ' + n + ' players',
    'hand ' + (view.hands + (over ? 0 : 1)),
    'dealer P' + view.dealer + ' (streak ' + view.streak + ')',
    'wall ' + view.wall_left + ' left',
    view.flip ? 'flip ' + view.flip + (view.golden ? ': golden chicken (jin ji)' : '') :
      'flip: not yet turned',
    'totals ' + view.totals.map((x, s) => 'P' + s + ' ' + (x > 0 ? '+' : '') + x).join(' ')];
  if (view.seed !== null) summary.push('seed ' + view.seed);
  $('summary').textContent = summary.join(' | ');
  const turn = $('turn');
  turn.className = '';
  if (view.status === 'error') {
    turn.textContent = 'Table ended: ' + view.error;
    turn.className = 'error';
  } else if (over) {
    turn.textContent = 'Hand over';
  } else if (view.legal.length) {
    turn.textContent = 'Your move';
    turn.className = 'you';
  } else if (view.thinking !== null) {
    turn.textContent = seatName(view.thinking) + ' is thinking...';
    turn.className = 'thinking';
  } else if (view.actor !== null) {
    turn.textContent = seatName(view.actor) + ' to act' + (view.paused ? ' (paused)' : '');
  } else {
    turn.textContent = 'P' + view.turn_seat + "'s turn" + (view.paused ? ' (paused)' : '');
  }
  const watch = view.seat === null;
  $('pause').textContent = view.paused ? 'play' : 'pause';
  $('pause').hidden = $('step').hidden = !watch && !view.paused;
  if (document.activeElement !== $('pace')) $('pace').value = view.pace_ms;
  $('hint-toggle').disabled = watch;
  $('hint-toggle').value = view.hint_agent || '';
  drawBoard(view);
  drawActions(view);
  drawHint(view);
  drawDecision(view);
  drawSettlement(view);
  const ev = $('events');
  ev.replaceChildren();
  view.events.forEach((line) => ev.append(el('li', '', line)));
  ev.scrollTop = ev.scrollHeight;
}

function drawBoard(view) {
  const over = view.settlement;
  const st = over ? over.table : view.table;
  const clickable = legalDiscards().length > 0;
  if (selected >= 0 && !clickable) selected = -1;
  ZT.drawTable($('table'), st, {
    names: view.names.map((x, s) => 'P' + s + ' ' + x.replace(/^P\d+ /, '')),
    dealer: view.dealer,
    actor: over ? null : view.actor,
    deltas: over ? over.result.deltas : null,
    tags: view.names.map((_, s) => (view.thinking === s ? 'thinking...' : '')),
    clickSeat: clickable ? view.seat : null,
    onTile: clickable ? (code) => discard(code) : null,
  });
  const tiles = clickable ? handTiles() : [];
  if (selected >= tiles.length) selected = tiles.length - 1;
  if (selected >= 0) tiles[selected].classList.add('selected');
}

function drawActions(view) {
  const box = $('actions');
  box.replaceChildren();
  if (!view.legal.length) return;
  const claims = view.legal.filter((l) => !l.text.startsWith('discard '));
  if (view.tile && view.phase !== 'turn') {
    box.append(el('div', '', 'P' + view.turn_seat + (view.phase === 'rob' ? ' adds ' :
      ' discarded ') + view.tile + ': your choice'));
  }
  claims.forEach((l) => {
    const b = el('button', 'action');
    b.type = 'button';
    b.dataset.action = l.text;
    b.append(l.text + ' ');
    if (l.key) b.append(el('kbd', '', l.key));
    b.onclick = () => send(l.action);
    box.append(b);
  });
  if (legalDiscards().length) {
    box.append(el('div', 'hint-note', 'Discard: click a tile of your hand, or Left/Right ' +
      'and Enter'));
  }
}

function drawHint(view) {
  const box = $('hint-box');
  box.replaceChildren();
  if (!view.hint_agent || !view.legal.length) return;
  box.append(el('h3', '', 'What would ' + view.hint_agent + ' do here?'));
  if (!view.hint) { box.append(el('div', 'thinking', 'thinking...')); return; }
  if (view.hint.error) { box.append(el('div', 'error', view.hint.error)); return; }
  const t = el('table');
  view.hint.probs.forEach(([a, p], j) => {
    const tr = el('tr', j === 0 ? 'top' : '');
    tr.dataset.action = a;
    tr.append(el('td', '', a));
    const td = el('td', '', (100 * p).toFixed(1) + '% ');
    const bar = el('span', 'bar');
    bar.style.width = Math.round(80 * p) + 'px';
    td.append(bar);
    tr.append(td);
    t.append(tr);
  });
  box.append(t);
  if (view.hint.value !== null) {
    box.append(el('div', '', 'value: ' + (view.hint.value > 0 ? '+' : '') +
      view.hint.value.toFixed(2) + ' points expected this hand'));
  }
}

function drawDecision(view) {
  const box = $('decision-box');
  box.replaceChildren();
  const d = view.last_decision;
  if (!d) return;
  box.append(el('h3', '', seatName(d.seat) + ' chose ' + d.chosen));
  if (d.probs) {
    const t = el('table');
    Object.entries(d.probs).sort((a, b) => b[1] - a[1]).forEach(([a, p]) => {
      const tr = el('tr', a === d.chosen ? 'chosen' : '');
      tr.append(el('td', '', a));
      tr.append(el('td', '', (100 * p).toFixed(1) + '%'));
      t.append(tr);
    });
    box.append(t);
    if (d.value !== null) box.append(el('div', '', 'value estimate ' + d.value.toFixed(2)));
  }
}

function drawSettlement(view) {
  const box = $('settle');
  box.replaceChildren();
  const over = view.settlement;
  if (over) {
    const r = over.result;
    box.append(el('div', '', 'Hand over: ' + r.end + ', winners ' +
      (r.winners.map((w) => 'P' + w).join(', ') || 'nobody') +
      (r.flip ? ', flip ' + r.flip : ', no flip') + ' | scores ' +
      r.deltas.map((d, s) => 'P' + s + ' ' + (d > 0 ? '+' : '') + d).join(', ')));
    ZT.drawLedger(box, over.ledger, view.names.map((_, s) => 'P' + s));
    const next = el('button', '', 'next hand ');
    next.id = 'next-hand';
    next.type = 'button';
    next.append(el('kbd', '', 'n'));
    next.onclick = () => control('next');
    box.append(next);
  }
  const rec = $('records');
  rec.replaceChildren();
  for (let k = 0; k < view.records; k++) {
    const a = el('a', 'record', 'record of hand ' + (k + 1));
    a.href = '/api/tables/' + view.id + '/records/' + k;
    a.download = '';
    rec.append(a, ' ');
  }
}

// ------------------------------------------------------------------------------- keys
document.addEventListener('keydown', (e) => {
  if (!V || $('game').hidden || ['INPUT', 'SELECT', 'TEXTAREA'].includes(e.target.tagName)) {
    return;
  }
  const key = e.key.toLowerCase();
  const byKey = V.legal.find((l) => l.key === key);
  if (byKey) { send(byKey.action); e.preventDefault(); return; }
  const tiles = legalDiscards().length ? handTiles() : [];
  if (tiles.length && (e.key === 'ArrowRight' || e.key === 'ArrowLeft')) {
    selected = e.key === 'ArrowRight' ? (selected + 1) % tiles.length :
      (selected <= 0 ? tiles.length - 1 : selected - 1);
    tiles.forEach((t, j) => t.classList.toggle('selected', j === selected));
    e.preventDefault();
  } else if (tiles.length && e.key === 'Enter' && selected >= 0) {
    discard(tiles[selected].dataset.tile);
    e.preventDefault();
  } else if (key === 'n' && V.settlement) {
    control('next');
  } else if (key === ' ' && V.seat === null) {
    control(V.paused ? 'play' : 'pause');
    e.preventDefault();
  } else if (key === 's' && (V.seat === null || V.paused)) {
    control('step');
  } else if (key === 'i' && V.seat !== null && CONFIG.policies.length) {
    control('hint', {agent: V.hint_agent ? null : CONFIG.policies[0]});
  }
});

// ------------------------------------------------------------------------------- start
function route() {
  const m = /^#table=([\w-]+)$/.exec(location.hash);
  if (m) showTable(m[1]);
  else showLobby().catch((e) => message(e.message));
}

async function start() {
  CONFIG = await api('GET', '/api/config');
  options($('preset'), CONFIG.presets);
  options($('hint'), [null, ...CONFIG.policies], ['off', ...CONFIG.policies]);
  if (CONFIG.policies.includes('ppo-guiyang')) $('hint').value = 'ppo-guiyang';
  options($('hint-toggle'), [null, ...CONFIG.policies], ['off', ...CONFIG.policies]);
  $('players').onchange = seatChoices;
  $('your-seat').onchange = mineChanged;
  seatChoices();
  $('new-table').onsubmit = createTable;
  $('lobby-link').onclick = () => { location.hash = ''; };
  $('pause').onclick = () => control(V.paused ? 'play' : 'pause');
  $('step').onclick = () => control('step');
  $('pace').onchange = (e) => control('pace', {pace_ms: Number(e.target.value)});
  $('hint-toggle').onchange = (e) => control('hint', {agent: e.target.value || null});
  $('end').onclick = async () => {
    try { await api('DELETE', '/api/tables/' + tableId); } catch (e) { message(e.message); }
    location.hash = '';
  };
  window.onhashchange = route;
  route();
}
start().catch((e) => message(e.message));
