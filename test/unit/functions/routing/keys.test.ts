import { describe, expect, it } from 'vitest';
import {
  decodeS3EventKey,
  DEFAULT_PREFIXES,
  inputKind,
  isHiddenPath,
  jobIdFor,
  keyProblem,
  partNameFor,
  recordedKind,
  relativeInputPath,
  reportKey,
  resultKeys,
  resultPrefix,
  splitPartNames,
  workKey,
} from '../../../../functions/routing/index.ts';

/** What S3 puts into a notification: form-URL-encoding of the key. */
const s3Encode = (key: string) => encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/');

describe('inputKind', () => {
  it.each([
    ['inbox/a.geojson', 'geojson'],
    ['inbox/a.JSON', 'geojson'],
    ['inbox/a.tif', 'geotiff'],
    ['inbox/b/A.TIFF', 'geotiff'],
    ['inbox/a.png', undefined],
    ['inbox/geojson', undefined],
    ['inbox/a.tif.txt', undefined],
  ])('%s -> %s', (key, kind) => {
    expect(inputKind(key)).toBe(kind);
  });
});

describe('decodeS3EventKey', () => {
  it.each([
    ['inbox/my file.geojson'],
    ['inbox/a+b.tif'],
    ['inbox/100% done.tif'],
    ['inbox/Zürich/Straße 1.geojson'],
    ['inbox/東京/区.geojson'],
    ['inbox/emoji 🏠+%2B.tif'],
  ])('round-trips %s as S3 encodes it', (key) => {
    // Prepare
    const raw = s3Encode(key);

    // Act
    const decoded = decodeS3EventKey(raw);

    // Assess
    expect(decoded).toBe(key);
  });

  it('reads "+" as a space and %2B as a plus', () => {
    expect(decodeS3EventKey('inbox/a+b%2Bc.tif')).toBe('inbox/a b+c.tif');
  });

  it('keeps a malformed escape instead of failing, decoding the rest', () => {
    expect(decodeS3EventKey('inbox/50%+off%C3%BC%E0.tif')).toBe('inbox/50% offü%E0.tif');
  });
});

describe('jobIdFor', () => {
  const input = { bucket: 'drop', key: 'inbox/buildings/Zürich Nord (2024).tif', etag: '"9b2cf535f27731c974343645a3985328"' };

  it('is a valid Step Functions execution name', () => {
    // Prepare
    const longKey = { ...input, key: `inbox/${'very long name '.repeat(20)}.geojson` };

    // Act
    const ids = [jobIdFor(input), jobIdFor(longKey), jobIdFor({ ...input, key: 'inbox/東京.geojson' })];

    // Assess
    for (const id of ids) {
      expect(id.length).toBeLessThanOrEqual(80);
      expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    expect(ids[0]).toMatch(/^Zurich-Nord-2024-[0-9a-f]{32}$/);
    expect(ids[2]).toMatch(/^job-[0-9a-f]{32}$/);
  });

  it('is the same for the same object, with or without ETag quotes', () => {
    expect(jobIdFor(input)).toBe(jobIdFor({ ...input }));
    expect(jobIdFor(input)).toBe(jobIdFor({ ...input, etag: '9b2cf535f27731c974343645a3985328' }));
  });

  it('differs when the content, key or bucket differs', () => {
    const base = jobIdFor(input);
    expect(jobIdFor({ ...input, etag: '"0000f535f27731c974343645a3985328"' })).not.toBe(base);
    expect(jobIdFor({ ...input, key: 'inbox/other/Zürich Nord (2024).tif' })).not.toBe(base);
    expect(jobIdFor({ ...input, bucket: 'drop2' })).not.toBe(base);
  });
});

describe('key layout', () => {
  const key = 'inbox/buildings/2024/bern west.geojson';

  it('keeps the path below the inbox', () => {
    expect(relativeInputPath(key, 'inbox/')).toBe('buildings/2024/bern west.geojson');
    expect(relativeInputPath('elsewhere/a.tif', 'inbox/')).toBe('elsewhere/a.tif');
  });

  it('places results, job.json, reports and work objects', () => {
    // Act
    const keys = resultKeys(DEFAULT_PREFIXES, key, partNameFor(key));

    // Assess
    expect(keys).toEqual({
      resultKey: 'results/buildings/2024/bern west.geojson/bern_west/result.geojson',
      jobJsonKey: 'results/buildings/2024/bern west.geojson/bern_west/job.json',
    });
    expect(resultPrefix(DEFAULT_PREFIXES, key)).toBe('results/buildings/2024/bern west.geojson/');
    expect(reportKey(DEFAULT_PREFIXES, key)).toBe('failed/buildings/2024/bern west.geojson/report.json');
    expect(workKey(DEFAULT_PREFIXES, 'job-1', 'geometry-0.geojson')).toBe('work/job-1/geometry-0.geojson');
    expect(reportKey({ ...DEFAULT_PREFIXES, inbox: 'drop/in/', failed: 'out/failed/' }, 'drop/in/a.tif')).toBe('out/failed/a.tif/report.json');
  });

  it('names parts after the file, and split parts after their features', () => {
    // Act
    const names = splitPartNames('inbox/quarters.v2.geojson', [
      { index: 0, name: 'Länggasse/Felsenau' },
      { index: 1, name: '' },
      { index: 2, name: 'Länggasse/Felsenau' },
      { index: 3, name: '..' },
      { index: 4 },
    ]);

    // Assess
    expect(partNameFor('inbox/a/quarters.v2.geojson')).toBe('quarters.v2');
    expect(names).toEqual([
      'quarters.v2-Länggasse_Felsenau',
      'quarters.v2-1',
      'quarters.v2-2-Länggasse_Felsenau',
      'quarters.v2-__',
      'quarters.v2-4',
    ]);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('keys the bridge refuses (INVALID_KEY)', () => {
  it.each([
    ['inbox/a/../b.geojson', "a '..' path segment"],
    ['inbox/../../../etc/x.geojson', "a '..' path segment"],
    ['inbox/./b.geojson', "a '.' path segment"],
    ['inbox//b.geojson', "an empty path segment ('//')"],
    ['/inbox/b.geojson', "a leading '/'"],
    ['inbox/b\u0000.geojson', 'a control character (U+0000)'],
    ['inbox/b\nc.geojson', 'a control character (U+000A)'],
    ['inbox/b\u007f.tif', 'a control character (U+007F)'],
    ['inbox/b\u0085.tif', 'a control character (U+0085)'],
  ])('%j has %s', (key, problem) => {
    expect(keyProblem(key)).toBe(problem);
  });

  it.each([['inbox/a.geojson'], ['inbox/folder/'], ['inbox/..a/b...c.tif'], ['inbox/.hidden.geojson'], ['inbox/Zürich/東京 (1).tif'], ['inbox/a b+c%20.json']])(
    'takes %j',
    (key) => {
      expect(keyProblem(key)).toBeUndefined();
    },
  );

  it('writes the report of a refused key under failed/.invalid-keys/, never on the path the key names', () => {
    // Act
    const keys = ['inbox/a/../../../outside.geojson', 'inbox//x.tif', 'inbox/x\u0001.tif'].map((key) => reportKey(DEFAULT_PREFIXES, key));
    // Assess
    for (const key of keys) expect(key).toMatch(/^failed\/\.invalid-keys\/[0-9a-f]{32}\/report\.json$/);
    expect(new Set(keys).size).toBe(3);
    expect(reportKey(DEFAULT_PREFIXES, 'inbox//x.tif')).toBe(keys[1]);
  });

  it('derives no results or work key from a refused key or id', () => {
    // Act / Assess
    expect(() => resultPrefix(DEFAULT_PREFIXES, 'inbox/a/../../b.geojson')).toThrow(expect.objectContaining({ name: 'InputRejected', code: 'INVALID_KEY' }));
    expect(() => resultKeys(DEFAULT_PREFIXES, 'inbox//b.geojson', 'b')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    expect(() => resultKeys(DEFAULT_PREFIXES, 'inbox/b.geojson', '..')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    expect(() => workKey(DEFAULT_PREFIXES, '../../x', 'plan.json')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    expect(() => workKey(DEFAULT_PREFIXES, '..', 'plan.json')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
  });

  it('tells hidden paths below the inbox (ignored by dispatch)', () => {
    expect(isHiddenPath('inbox/.partial.geojson', 'inbox/')).toBe(true);
    expect(isHiddenPath('inbox/a/.sync/b.tif', 'inbox/')).toBe(true);
    expect(isHiddenPath('inbox/a/b.tif', 'inbox/')).toBe(false);
    expect(isHiddenPath('inbox/a.b/c..d.tif', 'inbox/')).toBe(false);
  });

  it("records kind 'unsupported' for a file type the bridge does not take", () => {
    expect(recordedKind('inbox/readme.txt')).toBe('unsupported');
    expect(recordedKind('inbox/a.TIF')).toBe('geotiff');
  });
});
