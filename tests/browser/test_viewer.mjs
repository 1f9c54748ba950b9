// test_viewer.mjs -- opens an mplan HTML report in headless Debian chromium
// (driven by playwright-core, no browser download) and checks it as a
// person would: no console error, no network request, the summary cards
// agree with the plan JSON, hovering a tensor's rectangle shows its card,
// the peak marker sits on the plan's peak interval, the per-op table has
// its 100% row; then saves a screenshot.
//
// usage: node test_viewer.mjs --html REPORT.html --plan PLAN.json
//          --out DIR [--hover TENSOR] [--name NAME] [--graph yes|no]
// The expectations come from PLAN.json (written by `mplan plan -o`), not
// from the page's own data. Prints "N passed, M failed" and exits 1 on any
// failure. A line "load_ms ..." reports how long the page took to open.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
}
for (const k of ['html', 'plan', 'out']) {
  if (!args[k]) {
    console.error(`test_viewer: missing --${k}`);
    process.exit(2);
  }
}
const name = args.name || path.basename(args.html, '.html');
// --plan none: a page whose plan no plan file gives (a verification with an
// injected fault runs a changed plan); only the checks that need none.
const plan = args.plan === 'none' ? null : JSON.parse(fs.readFileSync(args.plan, 'utf8'));
fs.mkdirSync(args.out, { recursive: true });

let passed = 0, failed = 0;
function check(ok, what, detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL: ${what}${detail !== undefined ? ': ' + detail : ''}`);
  }
}

// Independent of viewer.js: the project's byte format (common/units.c).
function fmtBytes(v) {
  const count = String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  if (v < 1024) return `${count} B`;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let d = v, u = 0;
  while (d >= 1024 && u + 1 < units.length) { d /= 1024; u++; }
  return `${count} B (${d.toFixed(2)} ${units[u]})`;
}

const userData = fs.mkdtempSync(path.join(os.tmpdir(), 'mplan-chromium-'));
const context = await chromium.launchPersistentContext(userData, {
  executablePath: process.env.MPLAN_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: ['--headless', '--no-sandbox', '--disable-gpu',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
try {
  const page = context.pages()[0] || await context.newPage();
  const errors = [], requests = [];
  const url = pathToFileURL(path.resolve(args.html)).href;
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  page.on('request', r => { if (r.url() !== url) requests.push(r.url()); });
  const started = Date.now();
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('html[data-ready="1"]', { timeout: 30000 });
  const wall = Date.now() - started;
  const loadMs = await page.evaluate(() => window.mplanViewer.loadMs);
  console.log(`load_ms ${loadMs.toFixed(0)} (in-page, navigation start to ready); wall ${wall} ms`);

  // Nothing makes the page wider than the window (1400 px): long text in
  // a table (the passes' "what") wraps, the graph and map scroll inside.
  const fitsWidth = async () => {
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    check(widths[0] <= widths[1], 'the page fits the window\'s width', JSON.stringify(widths));
  };
  main: { // eslint-disable-line no-labels
  if (!plan) {
    await fitsWidth();
    if (args.events) {
      const rows = await page.$$eval('#verification table tr', rs => rs.length - 1);
      check(rows === Number(args.events), `one row per verification event (${args.events})`, String(rows));
    }
    break main;
  }
  // Responsiveness: time from a hover to the card's update.
  const s = plan.summary;
  check((await page.textContent('#card-arena .value')) === fmtBytes(s.arena_bytes),
    'arena card shows the plan\'s arena', await page.textContent('#card-arena .value'));
  check((await page.textContent('#card-lower-bound .value')) === fmtBytes(s.lower_bound_bytes),
    'lower-bound card');
  const over = s.activation_peak_bytes - s.lower_bound_bytes;
  check((await page.textContent('#card-overhead .value')) === fmtBytes(over), 'overhead card');
  check((await page.textContent('#card-waste .value')) === fmtBytes(s.alignment_waste_bytes),
    'alignment waste card');
  check((await page.textContent('#card-arena .sub')).includes(fmtBytes(s.activation_peak_bytes)),
    'arena card breaks the arena down');
  check((await page.textContent('#card-tool .value')).startsWith('mplan '), 'tool card');

  // The peak marker covers exactly the plan's peak intervals.
  // With no activation there is no peak to mark (plan JSON still lists
  // the all-zero interval).
  const iv = plan.peak.bytes > 0 ? plan.peak.intervals : [];
  const markers = await page.$$eval('.peak-marker', ms => ms.map(m => ({
    first: Number(m.dataset.first), last: Number(m.dataset.last),
    w: m.getBoundingClientRect().width,
  })));
  check(markers.length === iv.length, 'one peak marker per peak interval',
    `${markers.length} vs ${iv.length}`);
  for (let k = 0; k < Math.min(markers.length, iv.length); k++) {
    check(markers[k].first === iv[k].first && markers[k].last === iv[k].last,
      `peak marker ${k} is at steps ${iv[k].first}..${iv[k].last}`, JSON.stringify(markers[k]));
    check(markers[k].w > 0, `peak marker ${k} is visible`);
  }
  check(await page.$('#lower-bound-line') !== null, 'the lower bound is drawn');
  if (iv.length) {
    // Hovering the curve inside the peak interval reads 100% of the peak.
    const box = await page.$eval('.peak-marker', m => {
      const r = m.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    });
    await page.mouse.move(box.x, box.y);
    const readout = await page.textContent('#curve-readout');
    check(readout.includes('100.0% of the peak') && readout.includes(fmtBytes(plan.peak.bytes)),
      'the curve reads 100% at the peak marker', readout);
    const peakRow = await page.$$eval('#op-table .vrow.peak', rs => rs.map(r => r.children[4].textContent));
    check(peakRow.length > 0 && peakRow.every(p => p === '100.0'), 'the per-op table marks its peak rows at 100.0',
      JSON.stringify(peakRow));
    const drill = await page.$$eval('#peak-table tbody tr', rs => rs.map(r => r.children[1].textContent));
    const want = plan.peak.live.map(l => l.name);
    check(JSON.stringify(drill.slice(0, want.length)) === JSON.stringify(want),
      'the drill-down lists the peak tensors largest first', JSON.stringify(drill));
    // The 'in use' column: what plan JSON says each buffer of the first
    // peak step holds live (graphs), and the caption's idle total.
    const inUse = await page.$$eval('#peak-table tbody tr', rs => rs.map(r => r.children[3].textContent));
    plan.peak.live.forEach((l, k) => {
      if (l.in_use_bytes === undefined) return;
      check(inUse[k] === fmtBytes(l.in_use_bytes), `the drill-down shows ${l.name} with ${l.in_use_bytes} B in use`,
        inUse[k]);
    });
    const caption = await page.textContent('#peak-table caption');
    check(plan.peak.idle_bytes ? caption.includes('; idle ' + fmtBytes(plan.peak.idle_bytes)) : !caption.includes('idle'),
      'the drill-down caption gives the idle bytes', caption);
    await page.click('#sort-remaining');
    const byRemaining = await page.$$eval('#peak-table tbody tr', rs => rs.map(r => Number(r.children[6].textContent)));
    check(byRemaining.every((v, k) => k === 0 || byRemaining[k - 1] >= v),
      'sorting by remaining lifetime orders the rows', JSON.stringify(byRemaining));
    await page.click('#sort-size');
  }

  // Hover a tensor's rectangle: its card names it with the plan's facts.
  const hover = args.hover || (plan.peak.live[0] && plan.peak.live[0].name);
  if (hover) {
    const b = plan.buffers.find(x => x.name === hover);
    // The mouse works in viewport coordinates: bring the map into view.
    await page.$eval('#map-wrap', e => e.scrollIntoView({ block: 'center' }));
    let at = await page.evaluate(n => window.mplanViewer.rectCenter(n), hover);
    // On big graphs a tensor is a sliver: zoom in with the wheel, as a
    // person would, until it is wide enough to point at.
    for (let k = 0; at && at.w < 6 && k < 60; k++) {
      await page.mouse.move(at.x, at.y);
      await page.mouse.wheel(0, -100);
      await page.waitForTimeout(10);
      at = await page.evaluate(n => window.mplanViewer.rectCenter(n), hover);
    }
    check(at !== null, `the map draws '${hover}'`);
    if (at) {
      await page.mouse.move(at.x, at.y);
      const t0 = Date.now();
      await page.waitForSelector('#hover-card:not(.hidden)', { timeout: 5000 });
      const respond = Date.now() - t0;
      const card = await page.textContent('#hover-card');
      console.log(`hover_ms ${respond}`);
      check(card.startsWith(hover), 'the hover card names the tensor', card);
      check(card.includes(fmtBytes(b.size)), 'the hover card shows its bytes', card);
      const off = String(b.offset).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
      check(card.includes(off), 'the hover card shows its offset', card);
      if (b.last_consumer) check(card.includes(b.last_consumer), 'the hover card names the last consumer', card);
      if (b.producer) check(card.includes(b.producer), 'the hover card names the producer', card);
      check(card.includes('region') && card.includes('arena'), 'the hover card names the region', card);
      check(card.includes('padding'), 'the hover card shows the padding', card);
      if (b.shape) check(card.includes(b.shape), 'the hover card shows the shape', card);
      // A shared buffer (views, in place, Concat slices) names what else it
      // holds, why, and where a member away from the first byte starts (a
      // slice, or a tensor written in place over one).
      const esc = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      (b.tensors || []).slice(1).forEach((t, k) => {
        const at = b.tensor_offsets[k + 1];
        const where = new RegExp(`${esc(t)} \\((view|own|in place \\([a-z ]+\\)) at \\+${at}\\)`);
        check(card.includes('also holds') && card.includes(t) &&
          (!at || where.test(card)),
          `the hover card names '${t}', held in the buffer`, card);
      });
    }
  }
  if (args.graph === 'yes') {
    check(await page.$('#graph svg g.node') !== null, 'the graph SVG is embedded');
  }
  await fitsWidth(); // after the hovers: the curve's readout names an op
  // Passes (issue 9): one row per pass with the plan's lower bounds.
  if (plan.passes) {
    const rows = await page.$$eval('#passes table:first-of-type tr', rs =>
      rs.slice(1).map(r => [...r.children].map(c => c.textContent)));
    check(rows.length === plan.passes.rows.length, 'one row per pass',
      `${rows.length} vs ${plan.passes.rows.length}`);
    const count = v => String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    plan.passes.rows.forEach((r, k) => {
      const cells = rows[k] || [];
      check(cells[0] === r.pass && (cells[3] || '').startsWith(count(r.lower_bound_before)) &&
        (cells[3] || '').includes(count(r.lower_bound_after)),
        `pass row ${k} shows ${r.pass} and its lower bounds`, JSON.stringify(cells));
    });
    if (plan.passes.rows.some(r => r.peak_moved)) {
      check(rows.some(c => c[5] === 'yes'), 'a pass that moved the peak says so');
    }
  }
  // Tiling (docs/tile.md): what the tile pass chose, and for patches kept
  // a band x column grid whose cells count the ops the plan's execution
  // marks with that patch.
  const tile = plan.passes && plan.passes.tile;
  if (tile) {
    const line = (await page.textContent('#tile-summary')) || '';
    check(line.includes(tile.outcome) && (!tile.cut || line.includes(tile.cut)),
      'the tile line says what the pass chose', line);
    const xs = tile.exports || [];
    check(xs.every(x => line.includes('\u2018' + x + '\u2019')) &&
      line.includes('also joins') === xs.length > 0,
      'the tile line names the tensors joined besides the cut', line);
    if (tile.outcome === 'kept') {
      const cells = await page.$$eval('#tile-grid tr', rs =>
        rs.map(r => [...r.children].map(c => c.textContent)));
      check(cells.length === tile.bands && cells.every(r => r.length === tile.columns),
        `a ${tile.bands} x ${tile.columns} grid of patches`, JSON.stringify(cells));
      let same = true;
      for (let r = 0; r < tile.bands; r++) {
        for (let q = 0; q < tile.columns; q++) {
          const n = plan.execution.filter(e => e.patch && e.patch.role === 'copy' &&
            e.patch.band === r && e.patch.column === q).length;
          if (!(cells[r] || [])[q] || !cells[r][q].includes(`: ${n} ops`)) same = false;
        }
      }
      check(same, 'each patch cell counts the plan\'s ops of that patch', JSON.stringify(cells));
    }
  }
  // --what-if: one row per setting, with the plan's figure for it.
  if (plan.what_if) {
    const rows = await page.$$eval('#what-if tr', rs =>
      rs.slice(1).map(r => [...r.children].map(c => c.textContent)));
    const bounds = plan.what_if.filter(w => !w.strategy);
    const places = plan.what_if.filter(w => w.strategy);
    check(rows.length === bounds.length, 'one what-if row per setting',
      `${rows.length} vs ${bounds.length}`);
    const prow = await page.$$eval('#what-if-places tr', rs =>
      rs.slice(1).map(r => [...r.children].map(c => c.textContent)));
    check(prow.length === places.length && places.every((w, k) => prow[k][0] === w.setting &&
      prow[k][1] === fmtBytes(w.activation_arena_bytes)),
    'one row per other strategy, with the arena it placed', JSON.stringify(prow));
    check(bounds.every((w, k) => rows[k] && rows[k][0] === w.setting &&
      rows[k][1] === fmtBytes(w.lower_bound_bytes) &&
      (!w.tile || w.tile.outcome !== 'kept' || rows[k][3].includes(w.tile.cut))),
    'each what-if row shows its setting, bound and patches', JSON.stringify(rows));
  }
  if (plan.schedule) {
    const text = await page.textContent('#passes');
    check(text.includes(fmtBytes(plan.schedule.peak_bytes)), 'the memory order\'s peak is shown');
    const s = plan.schedule;
    check(text.includes(`${s.segments} segment${s.segments === 1 ? '' : 's'} (${s.bound_segments} met the step bound, ` +
      `${s.branch_bound_segments} the branch bound, ` +
      `${s.exact_segments} finished by the exact search`) &&
      text.includes(`${s.branch_improved_segments} by a branch order, ` +
        `${s.beam_improved_segments} by the beam, ` +
        `${s.move_improved_segments} by moving ops)`), 'how the memory order was proven',
      text.slice(text.indexOf('Memory-aware'), text.indexOf('Memory-aware') + 200));
    if (!s.optimal) {
      check(text.includes(`No order is below ${fmtBytes(s.bound_bytes)}`),
        'an order not proven says the bound every order has',
        text.slice(text.indexOf('Memory-aware'), text.indexOf('Memory-aware') + 400));
    }
    const count = (v) => String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    check(text.includes(`Search work ${count(s.work)} of ${count(s.work_budget)}`),
      'the search work and its budget are shown',
      text.slice(text.indexOf('Search work'), text.indexOf('Search work') + 80));
  }
  } // main
  await page.mouse.move(5, 5);
  const shot = path.join(args.out, `${name}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  check(fs.statSync(shot).size > 10000, 'the screenshot was saved', shot);
  console.log(`screenshot ${shot}`);
  check(errors.length === 0, 'no console errors', errors.join(' | '));
  check(requests.length === 0, 'no network requests', requests.join(' '));
} finally {
  await context.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
