import { describe, expect, it } from 'vitest';
import { ConfigurationError, InputRejected } from '../../../../functions/core/errors.ts';
import {
  applyOverrides,
  DEFAULT_ROUTES,
  defaultMosaicName,
  parseRoutes,
  resolveRoute,
  type Route,
} from '../../../../functions/routing/index.ts';

const routesJson = (routes: unknown[]) => JSON.stringify({ routes });

function configError(json: string): ConfigurationError {
  try {
    parseRoutes(json);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error('parseRoutes accepted invalid routes');
}

describe('parseRoutes', () => {
  it('gives the built-in routes when nothing is configured', () => {
    // Act
    const fromUndefined = parseRoutes(undefined);
    const fromBlank = parseRoutes('  ');

    // Assess
    expect(fromUndefined).toEqual(DEFAULT_ROUTES);
    expect(fromBlank.routes.map((r) => r.prefix)).toEqual(['', 'buildings/']);
    expect(fromUndefined.routes.find((r) => r.name === 'buildings')).toMatchObject({ processImages: true, model: '🏠 Buildings' });
  });

  it('accepts a full route and a bare array of routes', () => {
    // Prepare
    const full = {
      name: 'forest',
      prefix: 'forest/',
      model: '🌲 Forest',
      processImages: false,
      source: { dataProvider: { providerName: 'arcgis_world_imagery', zoom: 17 } },
      project: { name: 'Forests' },
      blocks: [{ name: 'Heights', enabled: true }],
      inferenceParams: { threshold: 0.5 },
      mosaicName: 'forest-images',
      creditBudget: 250,
      areaBudgetSqKm: 40,
      meta: { team: 'gis' },
      splitFeatures: true,
    };

    // Act
    const parsed = parseRoutes(routesJson([{ name: 'default', prefix: '' }, full]));
    const bare = parseRoutes(JSON.stringify([{ name: 'x', prefix: 'x/' }]));

    // Assess
    expect(parsed.routes[1]).toEqual(full);
    expect(bare.routes).toEqual([{ name: 'x', prefix: 'x/' }]);
  });

  it.each([
    ['not JSON', '{routes:', /not valid JSON/],
    ['no routes', '{"routes": []}', /at least one route/],
    ['unknown top-level key', '{"routes": [], "extra": 1}', /unknown top-level key 'extra'/],
    ['unknown route key', routesJson([{ name: 'a', prefix: '', modle: 'x' }]), /routes\[0\] \('a'\): unknown key 'modle'/],
    ['name missing', routesJson([{ prefix: '' }]), /routes\[0\]: 'name' must be/],
    ['prefix without slash', routesJson([{ name: 'a', prefix: 'buildings' }]), /'prefix' 'buildings' must be ''/],
    ['prefix with leading slash', routesJson([{ name: 'a', prefix: '/b/' }]), /must be '' or a folder path/],
    ['wrong type', routesJson([{ name: 'a', prefix: '', processImages: 'yes' }]), /'processImages' must be true or false/],
    ['negative budget', routesJson([{ name: 'a', prefix: '', creditBudget: -1 }]), /'creditBudget' must be a number of credits >= 0/],
    ['negative area budget', routesJson([{ name: 'a', prefix: '', areaBudgetSqKm: -1 }]), /'areaBudgetSqKm' must be a number of km² >= 0/],
    ['meta not strings', routesJson([{ name: 'a', prefix: '', meta: { n: 1 } }]), /'meta' must be an object of string values/],
    ['bad block', routesJson([{ name: 'a', prefix: '', blocks: [{ name: 'OSM' }] }]), /'blocks\[0\]' must be/],
    ['two sources', routesJson([{ name: 'a', prefix: '', source: { dataProvider: { providerName: 'm' }, userDefined: {} } }]), /exactly one of/],
    ['bad zoom', routesJson([{ name: 'a', prefix: '', source: { dataProvider: { providerName: 'm', zoom: 18.5 } } }]), /zoom' must be an integer/],
    ['bad project', routesJson([{ name: 'a', prefix: '', project: { title: 'x' } }]), /'project' must be/],
    ['duplicate name', routesJson([{ name: 'a', prefix: '' }, { name: 'a', prefix: 'b/' }]), /routes\[0\] and routes\[1\] have the same name 'a'/],
    ['duplicate prefix', routesJson([{ name: 'a', prefix: 'b/' }, { name: 'c', prefix: 'b/' }]), /same prefix 'b\/'/],
  ])('rejects %s with a clear message', (_label, json, message) => {
    // Act
    const error = configError(json);

    // Assess
    expect(error.message).toMatch(message);
    expect(error.code).toBe('CONFIGURATION');
  });
});

describe('resolveRoute', () => {
  const routes = parseRoutes(
    routesJson([
      { name: 'root', prefix: '' },
      { name: 'b', prefix: 'buildings/' },
      { name: 'b-aerial', prefix: 'buildings/aerial/' },
    ]),
  );

  it.each([
    ['inbox/a.geojson', 'root'],
    ['inbox/buildings/a.tif', 'b'],
    ['inbox/buildings/aerial/x/y.tif', 'b-aerial'],
    ['inbox/buildingsX/a.tif', 'root'],
  ])('%s takes the longest matching prefix (%s)', (key, expected) => {
    // Act
    const route = resolveRoute(routes, key, 'inbox/');

    // Assess
    expect(route?.name).toBe(expected);
  });

  it('finds nothing outside the inbox or without a root route', () => {
    // Prepare
    const noRoot = parseRoutes(routesJson([{ name: 'b', prefix: 'buildings/' }]));

    // Act & Assess
    expect(resolveRoute(routes, 'results/a.geojson', 'inbox/')).toBeUndefined();
    expect(resolveRoute(noRoot, 'inbox/a.geojson', 'inbox/')).toBeUndefined();
  });

  it('names a default mosaic after the route', () => {
    expect(defaultMosaicName({ name: 'b', prefix: 'b/' })).toBe('mapflow-bridge-b');
    expect(defaultMosaicName({ name: 'b', prefix: 'b/', mosaicName: 'mine' })).toBe('mine');
  });

  it('names the default mosaic after the image family, so unlike images never share one', () => {
    // Prepare
    const cogeo = { crs: 'EPSG:3857', bands: 3, dtypes: ['uint8', 'uint8', 'uint8'], pixelSize: [0.5971642834779395, 0.5971642834779395] as [number, number] };
    const utm = { crs: 'EPSG:32612', bands: 4, dtypes: ['uint16', 'uint16', 'uint16', 'uint16'], pixelSize: [1.38, 1.38] as [number, number] };

    // Act
    const first = defaultMosaicName({ name: 'default', prefix: '' }, cogeo);
    const second = defaultMosaicName({ name: 'default', prefix: '' }, utm);

    // Assess
    expect(first).toBe('mapflow-bridge-default-EPSG3857-3xuint8-0.597');
    expect(second).toBe('mapflow-bridge-default-EPSG32612-4xuint16-1.38');
    expect(defaultMosaicName({ name: 'default', prefix: '', mosaicName: 'curated' }, utm)).toBe('curated');
  });
});

describe('applyOverrides', () => {
  const route: Route = {
    name: 'default',
    prefix: '',
    model: '🏠 Buildings',
    creditBudget: 10,
    meta: { team: 'gis' },
    source: { dataProvider: { providerName: 'mapbox', zoom: 18 } },
  };

  function rejection(member: unknown): InputRejected {
    try {
      applyOverrides(route, member);
    } catch (error) {
      expect(error).toBeInstanceOf(InputRejected);
      return error as InputRejected;
    }
    throw new Error('override accepted');
  }

  it('applies whitelisted settings without changing the route', () => {
    // Prepare
    const member = {
      model: '🌲 Forest',
      blocks: [{ name: 'Heights', enabled: true }],
      inferenceParams: { t: 1 },
      meta: { ticket: '42' },
      splitFeatures: true,
      name: 'Forest run',
      zoom: 17,
    };

    // Act
    const result = applyOverrides(route, member);

    // Assess
    expect(result).toMatchObject({
      model: '🌲 Forest',
      blocks: [{ name: 'Heights', enabled: true }],
      inferenceParams: { t: 1 },
      meta: { team: 'gis', ticket: '42' },
      splitFeatures: true,
      processingName: 'Forest run',
      source: { dataProvider: { providerName: 'mapbox', zoom: 17 } },
      creditBudget: 10,
    });
    expect(route.model).toBe('🏠 Buildings');
    expect(applyOverrides(route, undefined)).toBe(route);
  });

  it('accepts a built-in provider as source', () => {
    // Act
    const result = applyOverrides(route, { source: { dataProvider: { providerName: 'arcgis_world_imagery' } }, zoom: 19 });

    // Assess
    expect(result.source).toEqual({ dataProvider: { providerName: 'arcgis_world_imagery', zoom: 19 } });
  });

  it.each([
    ['a non-object member', 'Forest', /must be an object/],
    ['the budget', { creditBudget: 1e6 }, /"mapflow.creditBudget" cannot be set from a file/],
    ['the area budget', { areaBudgetSqKm: 1e6 }, /"mapflow.areaBudgetSqKm" cannot be set from a file/],
    ['the project', { project: { id: 'x' } }, /"mapflow.project" cannot be set/],
    ['an unknown key', { modle: 'x' }, /unknown key "mapflow.modle"; allowed keys: model/],
    ['a wrongly typed key', { splitFeatures: 'yes' }, /"mapflow.splitFeatures" must be true or false/],
    ['a bad zoom', { zoom: 30 }, /"mapflow.zoom" must be an integer from 0 to 22/],
    ['a URL source', { source: { userDefined: { sourceType: 'xyz', url: 'https://x/{z}/{x}/{y}' } } }, /may only choose a built-in provider/],
    ['a bad block', { blocks: [{ name: 'OSM', enabled: 'yes' }] }, /"mapflow": 'blocks\[0\]'/],
  ])('rejects %s naming the key', (_label, member, message) => {
    // Act
    const error = rejection(member);

    // Assess
    expect(error.code).toBe('INVALID_ROUTE_OVERRIDE');
    expect(error.message).toMatch(/^INVALID_ROUTE_OVERRIDE: /);
    expect(error.message).toMatch(message);
  });
});
