// Drives Debian's chromium through pushgate's web UI with playwright-core.
// Run by e2e/browser_test.go as
//
//   node test.js '<json config>'
//
// with config {scenario, base, artifacts, ...}. It prints one JSON line with
// what it measured and exits 0, or prints the failure and exits 1. Scenarios:
//
//   flow   filter the groups table, check the failed badge's hover text, open
//          a group, check that a <script> label value is shown and never run
//          (also inside the failure reason), delete the group through the
//          confirm dialog, then delete stale groups through the admin API
//          button.
//   scale  load the first screen of a large store and report its size and
//          timings (the Go test holds the limits).
'use strict';

const path = require('path');
const { chromium } = require('playwright-core');

const config = JSON.parse(process.argv[2] || '{}');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function check(cond, message) {
  if (!cond) { throw new Error(message); }
}

// shot saves a full-page screenshot into the artifacts directory.
async function shot(page, name) {
  if (config.artifacts) {
    await page.screenshot({ path: path.join(config.artifacts, name), fullPage: true });
  }
}

// jobsShown returns the job badges of the groups table, in order.
async function jobsShown(page) {
  return page.$$eval('table.groups tbody tr .b.job', (els) => els.map((e) => e.textContent));
}

async function flow(page, dialogs) {
  const result = {};
  await page.goto(config.base + '/', { waitUntil: 'load' });
  const all = await jobsShown(page);
  check(all.length === config.groups, `index shows ${all.length} groups, want ${config.groups}: ${all}`);
  await shot(page, 'index.png');

  // Filter by free text through the form (a plain GET, no script needed).
  await page.fill('input[name=q]', config.filter);
  await Promise.all([page.waitForURL(/[?&]q=/), page.press('input[name=q]', 'Enter')]);
  const filtered = await jobsShown(page);
  check(filtered.length === 1 && filtered[0] === `job="${config.victim}"`,
    `filter ${config.filter} shows ${JSON.stringify(filtered)}, want only ${config.victim}`);
  await shot(page, 'index-filtered.png');

  // The last rejected push's reason is the hover text of its badge.
  const title = await page.getAttribute('table.groups tbody tr .failed', 'title');
  check(title && title.includes(config.failure) && title.includes(config.hostile),
    `"last push failed" badge title ${JSON.stringify(title)}, want the reason quoting ${config.hostile}`);

  // Open the group.
  await Promise.all([page.waitForURL(/\/group\?key=/), page.click('table.groups tbody tr a')]);
  const heading = await page.textContent('h1');
  check(heading.includes(`job="${config.victim}"`), `group page heading ${heading}`);
  const families = await page.$$eval('section.family h2', (els) => els.map((e) => e.firstChild.textContent.trim()));
  for (const f of config.families) {
    check(families.includes(f), `group page lacks family ${f}: ${families}`);
  }
  // The hostile label value is text on the page, never markup.
  const bodyText = await page.textContent('main');
  check(bodyText.includes(config.hostile), `group page does not show the value ${config.hostile}`);
  check((await page.$$('main script, main img')).length === 0, 'a label value became markup');
  const reason = await page.textContent('dd.reason');
  check(reason === title, `group page reason ${JSON.stringify(reason)}, badge title ${JSON.stringify(title)}`);
  await shot(page, 'group.png');

  // Delete it: the confirm dialog is accepted, the page returns to the index.
  await Promise.all([page.waitForURL(/\/\?deleted=1$/), page.click('button[data-action=delete-group]')]);
  check(dialogs.some((d) => d.type === 'confirm' && d.message.includes(config.victim)),
    `no confirmation naming ${config.victim}: ${JSON.stringify(dialogs)}`);
  await page.waitForSelector('#notice:not([hidden])');
  const after = await jobsShown(page);
  check(!after.includes(`job="${config.victim}"`), `${config.victim} still listed after delete`);
  check(after.length === config.groups - 1, `index shows ${after.length} groups after delete`);
  await shot(page, 'index-after-delete.png');

  // Stale cleanup: the stale groups matching a label matcher, via the admin
  // API (a dry run for the confirmation, then the delete).
  const q = new URLSearchParams({ q: config.staleMatcher, stale: config.staleAfter });
  await page.goto(config.base + '/?' + q.toString(), { waitUntil: 'load' });
  const staleRows = await page.$$eval('table.groups tbody tr.stale', (els) => els.length);
  check(staleRows === config.staleGroups, `${staleRows} stale rows, want ${config.staleGroups}`);
  await shot(page, 'index-stale.png');
  const before = dialogs.length;
  await page.click('button[data-action=delete-stale]');
  await page.waitForFunction(() => /Deleted \d+ groups/.test(document.getElementById('notice').textContent));
  const confirmText = dialogs.slice(before).map((d) => d.message).join('\n');
  check(confirmText.includes(`Delete these ${config.staleGroups} stale groups?`), `stale confirmation: ${confirmText}`);
  result.staleNotice = await page.textContent('#notice');
  await page.waitForEvent('load'); // the page reloads itself after a delete

  await page.goto(config.base + '/status', { waitUntil: 'load' });
  await shot(page, 'status.png');
  check(dialogs.every((d) => d.type === 'confirm'), `unexpected dialog: ${JSON.stringify(dialogs)}`);
  return result;
}

async function scale(page) {
  const result = {};
  const start = Date.now();
  const resp = await page.goto(config.base + '/', { waitUntil: 'load' });
  result.wallMs = Date.now() - start;
  check(resp.ok(), `index answered ${resp.status()}`);
  result.htmlBytes = (await resp.body()).length;
  const nav = await page.evaluate(() => {
    const e = performance.getEntriesByType('navigation')[0];
    return { ttfbMs: e.responseStart - e.requestStart, responseEndMs: e.responseEnd, dclMs: e.domContentLoadedEventEnd, loadMs: e.loadEventEnd };
  });
  Object.assign(result, nav);
  result.rows = (await jobsShown(page)).length;
  result.heading = (await page.textContent('h1')).replace(/\s+/g, ' ').trim();
  await shot(page, 'index-10000.png');

  // The oldest-first view with a stale threshold: the operator's question.
  const t2 = Date.now();
  await page.goto(config.base + '/?sort=age&stale=1h', { waitUntil: 'load' });
  result.sortedWallMs = Date.now() - t2;
  result.lastPageLink = await page.getAttribute('a[rel=next]', 'href');
  return result;
}

async function main() {
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push({ type: d.type(), message: d.message() });
      // Accept confirmations; an alert would mean a label value ran.
      if (d.type() === 'confirm') { d.accept(); } else { d.dismiss(); }
    });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') { errors.push(m.text()); } });

    let result;
    if (config.scenario === 'flow') {
      result = await flow(page, dialogs);
    } else if (config.scenario === 'scale') {
      result = await scale(page);
    } else {
      throw new Error(`unknown scenario ${config.scenario}`);
    }
    check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
    process.stdout.write(JSON.stringify(result) + '\n');
  } finally {
    await browser.close();
  }
}

main().catch((err) => {
  process.stderr.write(`browser test failed: ${err.stack || err}\n`);
  process.exit(1);
});
