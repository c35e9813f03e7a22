/**
 * The jobs console in a real browser: headless Chromium from the system's
 * packages (scripts/check-chromium.sh installs Debian's under CI=true), driven
 * by puppeteer-core, which never downloads a browser. The bridge runs the two
 * bundled samples (what a first `npm start` drops); the page must show both
 * jobs SUCCEEDED in the table and their results on the map. Screenshots go to
 * test-output/console/ (gitignored).
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { startBridgeConsole } from '../../packages/cli/src/console/command.ts';
import type { ConsoleServer } from '../../packages/cli/src/console/server.ts';
import { ROOT, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { localBackend } from '../../packages/cli/src/control.ts';
import { retryJob } from '../../packages/cli/src/operations.ts';

// The page functions run in the browser; these names are only typed here (no DOM lib in this Node project).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare function requestAnimationFrame(callback: () => void): number;

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => Boolean(p && existsSync(p)));
const OUTPUT = path.join(ROOT, 'test-output', 'console');
const SAMPLES = path.join(ROOT, 'packages', 'local', 'samples');

if (!CHROMIUM) {
  console.warn('test/e2e/console.test.ts: skipped: no Chromium at /usr/bin/chromium (install it: apt-get install -y chromium, or set CHROMIUM_PATH).');
}

describe.skipIf(!CHROMIUM)('jobs console in headless Chromium', () => {
  let bridge: LocalBridge;
  let server: ConsoleServer;
  let browser: Browser;
  let page: Page;
  const jobIds: Record<string, string> = {};

  beforeAll(async () => {
    await mkdir(OUTPUT, { recursive: true });
    bridge = await startTestBridge();
    jobIds.geojson = (await bridge.putInbox(path.join(SAMPLES, 'bern-three-quarters.geojson'), 'bern-three-quarters.geojson')).jobId;
    jobIds.geotiff = (await bridge.putInbox(path.join(SAMPLES, 'cogeo.tif'), 'buildings/cogeo.tif')).jobId;
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    server = await startBridgeConsole(bridge);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    // Offline: any request that is not the console is refused.
    await page.setRequestInterception(true);
    page.on('request', (r) => (r.url().startsWith(server.url) ? void r.continue() : void r.abort()));
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await bridge?.close();
  }, 120_000);

  /** Pixels of the map's vector canvas that are drawn (not transparent). */
  const drawnPixels = (selector: string) =>
    page.evaluate((sel) => {
      // The jobs' canvas (the offline base layer has a canvas of its own, below it).
      const canvas = document.querySelector(`${sel} .leaflet-overlay-pane canvas`) as any;
      if (!canvas) return 0;
      const { data } = (canvas.getContext('2d') as any).getImageData(0, 0, canvas.width, canvas.height);
      let count = 0;
      for (let i = 3; i < data.length; i += 4) if ((data[i] as number) > 0) count++;
      return count;
    }, selector);

  it('shows the two sample jobs SUCCEEDED in the table and their results on the map', async () => {
    // Act
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr[data-status="SUCCEEDED"]').length === 2, { timeout: 60_000 });
    await page.waitForFunction(() => Number(document.getElementById('overview-map')?.dataset.features ?? 0) > 0, { timeout: 60_000 });
    // Assess
    const rows = await page.$$eval('#jobs tbody tr', (trs: any[]) => trs.map((tr: any) => [...tr.querySelectorAll('td')].map((td: any) => td.textContent?.trim())));
    expect(rows.map((r) => r[0]).sort()).toEqual(['bern-three-quarters.geojson', 'buildings/cogeo.tif']);
    for (const row of rows) {
      expect(row[1]).toBe('SUCCEEDED');
      expect(row[3]).toMatch(/^\d+(\.\d+)?$/); // credits
      expect(row[5]).toContain('100%');
    }
    expect(Number(await page.$eval('#overview-map', (m) => (m as any).dataset.features))).toBeGreaterThan(10);
    // Leaflet draws on an animation frame: wait until the canvas has pixels, then count them.
    await page.waitForFunction(() => new Promise((resolve) => requestAnimationFrame(() => resolve(true))));
    // The two samples are continents apart: at that scale each job shows as its marker (~200 px each).
    await expect.poll(() => drawnPixels('#overview-map'), { timeout: 30_000, interval: 250 }).toBeGreaterThan(300);
    await writeFile(path.join(OUTPUT, 'jobs-overview.png'), await page.screenshot({ fullPage: true }));
    // With one job shown (route filter), the map fits it and its result features fill the canvas.
    await page.select('#filter-route', 'default');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1, { timeout: 30_000 });
    await expect.poll(() => drawnPixels('#overview-map'), { timeout: 30_000, interval: 250 }).toBeGreaterThan(2_000);
    await writeFile(path.join(OUTPUT, 'jobs-one-route.png'), await page.screenshot({ fullPage: true }));
    await page.select('#filter-route', '');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 2, { timeout: 30_000 });
    const shot = await page.screenshot({ fullPage: true });
    await writeFile(path.join(OUTPUT, 'jobs.png'), shot);
    expect(shot.length).toBeGreaterThan(10_000);
  }, 120_000);

  it('filters by status and route', async () => {
    await page.select('#filter-status', 'FAILED');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 0, { timeout: 30_000 });
    await page.select('#filter-status', '');
    await page.waitForFunction(() => [...document.querySelectorAll('#filter-route option')].some((o: any) => (o as any).value === 'buildings'), { timeout: 30_000 });
    await page.select('#filter-route', 'buildings');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1, { timeout: 30_000 });
    expect(await page.$eval('#jobs tbody tr td.file', (td) => td.textContent)).toBe('buildings/cogeo.tif');
    await page.select('#filter-route', '');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 2, { timeout: 30_000 });
  }, 60_000);

  it('opens a job page with its history, Mapflow ids, quicklook and a map of the AOI and results', async () => {
    await page.click(`#jobs tbody tr[data-job-id="${jobIds.geojson}"]`);
    await page.waitForFunction(() => !document.getElementById('job-view')?.hidden && document.querySelectorAll('#job-history li').length >= 3, { timeout: 30_000 });
    await page.waitForFunction(() => Number(document.getElementById('job-map')?.dataset.features ?? 0) > 0, { timeout: 60_000 });
    await page.waitForFunction(() => [...document.querySelectorAll('#job-quicklooks img')].every((i: any) => (i as any).complete && (i as any).naturalWidth > 0), { timeout: 30_000 });
    const facts = await page.$eval('#job-facts', (dl) => dl.textContent ?? '');
    const row = await bridge.ledger.get(jobIds.geojson);
    expect(facts).toContain(row?.processingId);
    expect(facts).toContain(row?.projectId);
    const history = await page.$$eval('#job-history li', (lis) => lis.map((li) => li.textContent));
    expect(history.at(-1)).toContain('SUCCEEDED');
    expect(await page.$$eval('#job-quicklooks img', (imgs) => imgs.length)).toBe(row?.parts?.length);
    expect(await drawnPixels('#job-map')).toBeGreaterThan(2_000);
    expect(await page.$eval('#job-map-note', (p) => p.textContent)).toMatch(/^\d+ of \d+ result features shown$/);
    await writeFile(path.join(OUTPUT, 'job.png'), await page.screenshot({ fullPage: true }));
  }, 120_000);

  it('is read-only and answers only to its own Host', async () => {
    const call = (method: string, host?: string) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL(server.url);
        const req = request({ host: '127.0.0.1', port: url.port, path: '/api/jobs', method, headers: host ? { host } : {} }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await call('GET')).toBe(200);
    expect(await call('POST')).toBe(405);
    expect(await call('DELETE')).toBe(405);
    expect(await call('GET', 'evil.example:80')).toBe(421);
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
  });

  it('at 1366x768 shows every column beside the map, an offline base map, labelled dots and a favicon', async () => {
    // Prepare: a common laptop screen
    await page.setViewport({ width: 1366, height: 768 });
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length >= 2, { timeout: 60_000 });
    await page.waitForFunction(() => document.getElementById('overview-map')?.dataset.basemap === 'drawn', { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll('#overview-map .job-label').length >= 2, { timeout: 30_000 });
    // Act
    const shot = await page.screenshot();
    await writeFile(path.join(OUTPUT, 'jobs-1366x768.png'), shot);
    const layout = await page.evaluate(() => {
      const map = document.getElementById('overview-map').getBoundingClientRect();
      return {
        width: document.documentElement.clientWidth,
        mapLeft: map.left,
        columns: [...document.querySelectorAll('#jobs thead th')].map((th: any) => {
          const r = th.getBoundingClientRect();
          return { name: th.textContent, left: r.left, right: r.right, width: r.width };
        }),
      };
    });
    const labels = await page.$$eval('#overview-map .job-label', (els) => els.map((e: any) => e.textContent));
    const favicon = await page.evaluate(async () => (await fetch('/favicon.ico')).status);
    // Assess: every column on screen and left of the map
    expect(layout.columns.map((c) => c.name)).toEqual(['File', 'Status', 'Route', 'Cost', 'Duration', 'Progress (job)', 'Updated']);
    for (const column of layout.columns) {
      expect(column.width, column.name).toBeGreaterThan(0);
      expect(column.left, column.name).toBeGreaterThanOrEqual(0);
      expect(column.right, column.name).toBeLessThanOrEqual(Math.min(layout.mapLeft, layout.width));
    }
    expect(labels.join(' ')).toContain('bern-three-quarters.geojson');
    expect(labels.join(' ')).toContain('cogeo.tif');
    expect(await page.$$eval('#overview-map .leaflet-pane canvas', (c) => c.length)).toBeGreaterThanOrEqual(2);
    expect(favicon).toBe(200);
    // A label opens its job.
    await page.click(`#overview-map .job-label[data-job-id="${jobIds.geojson}"]`);
    await page.waitForFunction(() => !document.getElementById('job-view')?.hidden, { timeout: 30_000 });
  }, 120_000);

  it('shows a retry as the retry of its original, a rejected GeoTIFF\'s footprint on its map and in its quicklook, and error text wrapped at words', async () => {
    // Prepare: a GeoTIFF too coarse for Buildings (REJECTED before any part), and a FAILED job retried once
    jobIds.coarse = (await bridge.putInbox(path.join(ROOT, 'test', 'fixtures', 'bad-inputs', 'coarse-300m.tif'), 'buildings/coarse-300m.tif')).jobId;
    const failing = await tempFile('will-fail.geojson', squareAoi({ west: 7.45, mapflow: { meta: { simulate: 'fail:dataloader.TileNotReadable' } } }));
    jobIds.failed = (await bridge.putInbox(failing, 'will-fail.geojson')).jobId;
    expect((await bridge.waitForJob(jobIds.coarse, { timeoutMs: 120_000 }))?.status).toBe('REJECTED');
    expect((await bridge.waitForJob(jobIds.failed, { timeoutMs: 120_000 }))?.status).toBe('FAILED');
    const retry = await retryJob(localBackend(bridge), jobIds.failed);
    await bridge.waitForJob(retry.jobId, { timeoutMs: 120_000 });
    // Act: the list
    await page.goto(server.url);
    await page.waitForFunction((id: string) => Boolean(document.querySelector(`#jobs tbody tr[data-job-id="${id}"]`)), { timeout: 60_000 }, retry.jobId);
    const rows = await page.$$eval('#jobs tbody tr', (trs) => trs.map((tr: any) => ({ id: tr.dataset.jobId, retry: tr.classList.contains('retry'), file: tr.querySelector('td.file').textContent })));
    // Assess: the retry is marked and right under its original
    const original = rows.findIndex((r) => r.id === jobIds.failed);
    expect(rows[original + 1]).toMatchObject({ id: retry.jobId, retry: true, file: expect.stringContaining('retry 2 of will-fail.geojson') });
    expect(rows[original]?.file).toContain('(retried)');
    // Act: the rejected GeoTIFF's page
    await page.goto(`${server.url}#/job/${jobIds.coarse}`);
    await page.waitForFunction(() => Number(document.getElementById('job-map')?.dataset.aois ?? 0) > 0, { timeout: 60_000 });
    await page.waitForFunction(() => new Promise((resolve) => requestAnimationFrame(() => resolve(true))));
    await expect.poll(() => drawnPixels('#job-map'), { timeout: 30_000, interval: 250 }).toBeGreaterThan(100);
    const wrap = await page.$eval('#job-facts dd.error', (dd: any) => {
      const style = (globalThis as any).getComputedStyle(dd);
      return { wordBreak: style.wordBreak, overflowWrap: style.overflowWrap, text: dd.textContent };
    });
    await writeFile(path.join(OUTPUT, 'job-rejected-geotiff.png'), await page.screenshot({ fullPage: true }));
    // The rejection's quicklook draws the outline the map draws (its report's quicklook is the only one)
    const quicklook = await page.evaluate(async (id: string) => (await fetch(`/api/jobs/${id}/quicklook?index=0`)).text(), jobIds.coarse);
    // Assess
    expect(quicklook).not.toContain('no geometry to draw');
    expect(quicklook).toMatch(/<g id="aoi"[^>]*><(path|polygon|polyline)/);
    expect(wrap.text).toContain('PIXEL_SIZE_TOO_COARSE');
    expect(wrap.wordBreak).toBe('normal');
    expect(wrap.overflowWrap).toBe('break-word');
  }, 300_000);

  it('keeps the overview readable with jobs on two continents: close jobs share one labelled dot, no labels overlap', async () => {
    // Prepare: more jobs around Bern, Zurich and Basel, and two in San Francisco, beside those of the tests above
    const places: [string, number, number][] = [
      ['zurich', 8.54, 47.37],
      ['basel', 7.59, 47.56],
      ['bern-east', 7.47, 46.95],
      ['san-francisco', -122.42, 37.77],
      ['oakland', -122.27, 37.8],
    ];
    for (const [name, west, south] of places) {
      const { jobId } = await bridge.putInbox(await tempFile(`${name}.geojson`, squareAoi({ west, south })), `${name}.geojson`);
      await bridge.waitForJob(jobId, { timeoutMs: 120_000 });
    }
    const jobs = (await bridge.ledger.listRecent({ limit: 100 })).length;
    await page.setViewport({ width: 1366, height: 768 });
    await page.goto(server.url);
    await page.waitForFunction((n: number) => document.querySelectorAll('#jobs tbody tr').length === n, { timeout: 60_000 }, jobs);
    await page.waitForFunction(() => document.getElementById('overview-map')?.dataset.drawn === 'true' && document.querySelectorAll('#overview-map .job-label').length > 0, { timeout: 60_000 });

    // Act: every label's box on screen, and the jobs each stands for
    const labels = await page.$$eval('#overview-map .job-label', (els) =>
      els.map((e: any) => {
        const r = e.getBoundingClientRect();
        return { text: e.textContent, jobs: e.dataset.jobIds ? e.dataset.jobIds.split(' ').length : 1, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
      }),
    );
    await writeFile(path.join(OUTPUT, 'jobs-two-continents.png'), await page.screenshot());

    // Assess: no two labels overlap, close jobs were grouped, and every job drawn is on one label
    const overlapping = labels.flatMap((a, i) =>
      labels.slice(i + 1).filter((b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom).map((b) => `${a.text} / ${b.text}`),
    );
    expect(overlapping).toEqual([]);
    expect(labels.some((l) => l.jobs > 1 && /^\d+ jobs/.test(l.text))).toBe(true);
    expect(labels.reduce((sum, l) => sum + l.jobs, 0)).toBe(Math.min(jobs, 25));
  }, 600_000);
});
