// Checks a gpufit HTML report in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): the page loads from file:// with no request to any other URL, no console
// error and no uncaught exception; window.gpufitReport says it finished; every chart
// ([data-chart]) holds an SVG with drawn shapes; the sections named with --expect are there.
// Writes one PNG per section into --screenshots DIR (SECTION.png) when given.
//
//   node check-report.mjs REPORT.html [--expect headline,cost,...] [--screenshots DIR]
//
// Prints a JSON summary {sections: [{id, charts, svg_shapes: [...], rows, svg_text: [...],
// overflows, table_scrolls}], guarantee_count, requests, errors} on
// stdout; exit 0 when every check holds, 1 when one fails (the reasons on stderr), 2 on usage.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
let file = null, expect = [], shots = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--expect') expect = args[++i].split(',').filter(Boolean);
  else if (args[i] === '--screenshots') shots = args[++i];
  else if (!file) file = args[i];
  else { console.error('usage: check-report.mjs REPORT.html [--expect a,b] [--screenshots DIR]'); process.exit(2); }
}
if (!file || !fs.existsSync(file)) { console.error('check-report: no report file ' + file); process.exit(2); }

const failures = [];
const consoleErrors = [];
const foreign = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push('uncaught: ' + e.message));
  page.on('request', (r) => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u); });
  await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: 'load', timeout: 60000 });
  await page.waitForFunction(() => window.gpufitReport && window.gpufitReport.ready, null, { timeout: 60000 });
  const state = await page.evaluate(() => {
    const r = window.gpufitReport;
    const sections = [...document.querySelectorAll('section[data-section]')].map((s) => ({
      id: s.dataset.section,
      charts: s.querySelectorAll('[data-chart]').length,
      svg_shapes: [...s.querySelectorAll('[data-chart]')].map((c) => {
        const svg = c.querySelector('svg');
        return svg ? svg.querySelectorAll('path, rect, circle, polyline, polygon').length : 0;
      }),
      rows: s.querySelectorAll('tbody tr').length,
      // The labels each chart drew (its SVG's text), and whether anything in the section is
      // wider than it (a table cut off at the right edge instead of wrapping or scrolling).
      svg_text: [...s.querySelectorAll('[data-chart]')].map((c) => [...c.querySelectorAll('svg text')].map((t) => t.textContent).join('|')),
      cards: [...s.querySelectorAll('.card')].map((c) => ({
        label: c.querySelector('.label').textContent,
        value: c.querySelector('.value').textContent,
        sub: c.querySelector('.sub').textContent,
      })),
      overflows: s.scrollWidth > s.clientWidth,
      table_scrolls: [...s.querySelectorAll('.table-wrap')].some((w) => w.scrollWidth > w.clientWidth + 1),
    }));
    // How many times the page says the backtest's guarantee (once, in the headline).
    let guarantee = null;
    try {
      const data = JSON.parse(document.getElementById('gpufit-data').textContent);
      guarantee = data.result && data.result.backtest && data.result.backtest.guarantee;
    } catch (e) {
      guarantee = null;  // no data element (a broken page): the checks below say what failed
    }
    const main = document.getElementById('report');
    const guarantee_count = guarantee && main ? main.innerText.split(guarantee).length - 1 : null;
    return { errors: r.errors, sections, guarantee_count };
  });
  for (const e of state.errors) failures.push('report script: ' + e);
  for (const e of consoleErrors) failures.push('console: ' + e);
  for (const u of foreign) failures.push('requested ' + u + ' (a report must need no network)');
  const ids = state.sections.map((s) => s.id);
  for (const want of expect) if (!ids.includes(want)) failures.push('no section ' + want + ' (have ' + ids.join(', ') + ')');
  for (const s of state.sections)
    s.svg_shapes.forEach((n, i) => { if (n < 3) failures.push('section ' + s.id + ': chart ' + (i + 1) + ' drew ' + n + ' shapes'); });
  if (shots) {
    fs.mkdirSync(shots, { recursive: true });
    for (const s of state.sections) await page.locator('#s-' + s.id).screenshot({ path: path.join(shots, s.id + '.png') });
  }
  console.log(JSON.stringify({ sections: state.sections, guarantee_count: state.guarantee_count, requests: foreign, errors: consoleErrors }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error('check-report: ' + f);
  process.exit(1);
}
