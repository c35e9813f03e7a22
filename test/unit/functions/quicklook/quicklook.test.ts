import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { FeatureScanner } from '../../../../functions/geojson/features.ts';
import { Quicklook, escapeXml, quicklookKeyBeside, tapResult } from '../../../../functions/quicklook/index.ts';

const square = (x: number, y: number, d = 0.001) => ({
  type: 'Feature',
  properties: { name: 'a "quoted" {brace} [bracket]' },
  geometry: { type: 'Polygon', coordinates: [[[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]] },
});
const collection = (n: number) => ({ type: 'FeatureCollection', name: 'features', features: Array.from({ length: n }, (_, i) => square(7.44 + i * 0.002, 46.95)) });

describe('FeatureScanner', () => {
  it('finds every feature whatever the chunk boundaries, ignoring strings with braces', () => {
    // Prepare
    const text = JSON.stringify({ type: 'FeatureCollection', crs: { features: [1, 2] }, features: collection(7).features, bbox: [0, 0, 1, 1] });
    for (const size of [1, 3, 17, 1000]) {
      const seen: unknown[] = [];
      const scanner = new FeatureScanner({ onFeature: (f) => seen.push(f) });
      // Act
      for (let i = 0; i < text.length; i += size) scanner.push(text.slice(i, i + size));
      // Assess
      expect(scanner.count).toBe(7);
      expect(seen).toHaveLength(7);
      expect(seen[6]).toEqual(collection(7).features[6]);
    }
  });

  it('counts features over the size limit without parsing them', () => {
    const seen: unknown[] = [];
    const scanner = new FeatureScanner({ onFeature: (f) => seen.push(f), maxFeatureChars: 300 });
    const big = { type: 'Feature', properties: { pad: 'x'.repeat(1000) }, geometry: null };
    scanner.push(JSON.stringify({ type: 'FeatureCollection', features: [square(0, 0), big, square(1, 1)] }));
    expect(scanner.count).toBe(3);
    expect(scanner.skipped).toBe(1);
    expect(seen).toHaveLength(2);
  });
});

describe('Quicklook', () => {
  it('draws the AOI and the features to scale with a scale bar and the count', () => {
    const q = new Quicklook();
    q.setAoi({ type: 'Polygon', coordinates: [[[7.44, 46.95], [7.46, 46.95], [7.46, 46.96], [7.44, 46.96], [7.44, 46.95]]] });
    for (const f of collection(3).features) q.addFeature(f);
    const svg = q.render({ title: 'inbox/<b>&.geojson', subtitle: 'route default' });
    expect(svg).toContain('<g id="aoi"');
    const group = (id: string) => new RegExp(`<g id="${id}"[^>]*>(.*?)</g>`).exec(svg)?.[1] ?? '';
    expect(group('features').match(/<path d="M/g)?.length).toBe(3);
    expect(group('aoi').match(/<path d="M/g)?.length).toBe(1);
    expect(svg).toContain('3 features');
    expect(svg).toMatch(/<g id="scale-bar">.*\d+ (m|km)<\/text>/);
    expect(svg).toContain('inbox/&lt;b&gt;&amp;.geojson');
    // 0.02° of longitude at 46.95° N is ~1.52 km; the picture is 800 px wide with 10 % margin.
    const [, label] = /<text [^>]*font-size="11">([\d.]+ (?:m|km))</.exec(svg) ?? [];
    expect(['200 m', '500 m']).toContain(label);
  });

  it('caps what it draws and says so', () => {
    const q = new Quicklook({ maxFeatures: 10 });
    for (const f of collection(50).features) q.addFeature(f);
    const svg = q.render({ title: 't' });
    expect(q.drawn).toBe(10);
    expect(svg).toContain('50 features (10 drawn: the picture is capped)');
    expect(/<g id="features"[^>]*>(.*?)<\/g>/.exec(svg)?.[1]?.match(/<path d="M/g)?.length).toBe(10);
  });

  it('shows the reason of a failure, and survives hostile geometry', () => {
    const q = new Quicklook();
    q.setAoi({ type: 'Polygon', coordinates: [[[NaN, 1], ['a', 2], [1e308, 3], [7, 46], [7.1, 46], [7.1, 46.1], [7, 46]]] });
    q.addFeature({ type: 'MultiPolygon', coordinates: 'not an array' });
    const svg = q.render({ title: 'x', reason: 'PROCESSING_FAILED: Mapflow <said> no\u0000' });
    expect(svg).toContain('Reason: PROCESSING_FAILED: Mapflow &lt;said&gt; no');
    expect(svg).not.toContain('NaN');
    expect(svg).not.toContain('\u0000');
  });

  it('escapes text for XML', () => {
    expect(escapeXml('a<b>"c"&\u0007\ud800')).toBe('a&lt;b&gt;&quot;c&quot;&amp;');
  });
});

describe('tapResult', () => {
  it('passes the bytes through unchanged while counting the features', async () => {
    const text = JSON.stringify(collection(20));
    const tapped = tapResult(Readable.from([Buffer.from(text.slice(0, 100)), Buffer.from(text.slice(100))]));
    const out = await buffer(tapped.body);
    expect(out.toString()).toBe(text);
    expect(tapped.scanner.count).toBe(20);
    expect(tapped.quicklook.drawn).toBe(20);
  });

  it('reads a real sample AOI', async () => {
    const aoi = JSON.parse(await readFile(new URL('../../../../samples/aoi/bern-quarters.geojson', import.meta.url), 'utf8')) as unknown;
    const svg = new Quicklook().setAoi(aoi).render({ title: 'bern' });
    expect(svg).toMatch(/<g id="aoi"[^>]*><path d="M[\d. L]+/);
  });

  it('puts the quicklook beside the result or the report', () => {
    expect(quicklookKeyBeside('results/a/b.geojson/0/result.geojson')).toBe('results/a/b.geojson/0/quicklook.svg');
    expect(quicklookKeyBeside('failed/a/b.tif/report.json')).toBe('failed/a/b.tif/quicklook.svg');
  });
});
