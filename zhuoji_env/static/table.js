// Drawing a Zhuoji table and a settlement ledger in the browser: one piece of code for the
// replay viewer (zhuoji_env.view, which inlines this file) and the web app (agents.web, which
// serves it). Tiles are drawn as ASCII text ("5m"), so no font the machine may lack is needed.
// The data come from zhuoji_env.view.seat_view: every seat's hand (or, for a seat the viewer
// may not see, only how many concealed tiles it holds), melds, river and baoting state.
'use strict';
const ZT = (() => {
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // One tile face; code null draws a face-down tile (a concealed tile the viewer may not see).
  function tile(code, opts) {
    opts = opts || {};
    if (code === null) {
      const b = el('span', 'tile back' + (opts.small ? ' small' : ''));
      b.dataset.tile = 'back';
      return b;
    }
    const t = el('span', 'tile ' + code[1] + (opts.small ? ' small' : ''));
    t.dataset.tile = code;
    t.append(code[0]);
    t.append(el('small', '', code[1]));
    if (opts.chickens && opts.chickens.includes(code)) t.classList.add('chicken');
    if (opts.taken) t.classList.add('taken');
    if (opts.cf) t.classList.add('cf');
    if (opts.current) t.classList.add('current');
    return t;
  }
  // The seats of a table into box. opts: names (one label per seat), dealer, actor (the seat
  // highlighted as to act, or null), deltas (hand scores once it is over, or null), tags
  // (extra words per seat), onTile(code, element, seat) makes that seat's concealed tiles
  // clickable where clickSeat is the seat.
  function drawTable(box, st, opts) {
    box.replaceChildren();
    st.seats.forEach((seat, s) => {
      const div = el('div', 'seat' + (opts.actor === s ? ' actor' : ''));
      div.id = 'seat-' + s;
      const tags = [opts.names[s]];
      if (s === opts.dealer) tags.push('dealer');
      if (seat.baoting) tags.push('baoting ' + seat.baoting);
      if (seat.winner) tags.push('WINNER');
      if (opts.actor === s) tags.push('to act');
      if (opts.tags && opts.tags[s]) tags.push(opts.tags[s]);
      if (opts.deltas) {
        const d = opts.deltas[s];
        tags.push('hand score ' + (d > 0 ? '+' : '') + d);
      }
      div.append(el('div', 'seat-head', tags.join('  ')));
      const hand = el('div', 'row hand');
      hand.append(el('span', 'label', 'hand'));
      const click = opts.onTile && opts.clickSeat === s;
      const face = (c) => {
        const t = tile(c, {chickens: st.chickens});
        if (click) {
          t.classList.add('clickable');
          t.onclick = () => opts.onTile(c, t, s);
        }
        return t;
      };
      seat.hand.forEach((c) => hand.append(face(c)));
      for (let k = 0; k < (seat.hidden || 0); k++) hand.append(tile(null));
      if (seat.drawn) {
        const d = face(seat.drawn);
        d.classList.add('drawn');
        hand.append(d);
      }
      seat.melds.forEach((m) => {
        const md = el('span', 'meld');
        const r = el('span', 'row');
        for (let k = 0; k < m.size; k++) r.append(tile(m.tile, {chickens: st.chickens}));
        md.append(r);
        md.append(el('span', '', m.type + (m.from !== null ? ' from P' + m.from : '') +
          (m.late ? ' late' : '')));
        hand.append(md);
      });
      div.append(hand);
      const river = el('div', 'row river');
      river.append(el('span', 'label', 'river'));
      seat.river.forEach((r) => river.append(tile(r.t, {small: true, chickens: st.chickens,
        taken: r.taken, cf: r.cf, current: r.current})));
      div.append(river);
      box.append(div);
    });
  }
  // The settlement ledger (RULES.md 7), one row per payment, into box.
  function drawLedger(box, ledger, names) {
    box.append(el('h3', '', 'Settlement ledger (RULES.md 7)'));
    const t = el('table');
    t.id = 'ledger';
    const h = el('tr');
    ['item', 'payer', 'payee', 'amount'].forEach((x) => h.append(el('th', '', x)));
    t.append(h);
    ledger.forEach((l) => {
      const tr = el('tr');
      tr.dataset.item = l.item;
      [l.label, names[l.payer], names[l.payee], String(l.amount)].forEach((x) =>
        tr.append(el('td', '', x)));
      t.append(tr);
    });
    if (!ledger.length) {
      const tr = el('tr'); tr.append(el('td', '', 'no payments')); t.append(tr);
    }
    box.append(t);
  }
  return {el, tile, drawTable, drawLedger};
})();
