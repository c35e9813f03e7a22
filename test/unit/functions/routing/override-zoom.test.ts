/**
 * Issue 38: a file's zoom (and any override that sets one: a source, a
 * model) is held to the model's own range before anything is spent. Mapflow
 * refuses a zoom below the model's lowest (`source-validator.TooLowZoom`);
 * above it, only beyond 0-22, so nothing higher is refused here.
 */
import { describe, expect, it } from 'vitest';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { applyOverrides, DEFAULT_ROUTES, type Route } from '../../../../functions/routing/index.ts';

const route: Route = { name: 'default', prefix: '', model: '🏠 Buildings', source: { dataProvider: { providerName: 'mapbox', zoom: 18 } } };
const bern = [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]];
const fileWith = (mapflow: unknown) => JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: bern }, mapflow });

function rejectionOf(act: () => unknown): InputRejected {
  let caught: unknown;
  try {
    act();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(InputRejected);
  return caught as InputRejected;
}

describe('a file cannot set a zoom its model refuses', () => {
  it('refuses "mapflow.zoom": 0 on the default route (Buildings takes 17 or more), read from the file', () => {
    // Prepare
    const aoi = parseAoi(fileWith({ zoom: 0 }));

    // Act
    const rejection = rejectionOf(() => applyOverrides(DEFAULT_ROUTES.routes[0]!, aoi.overrides));

    // Assess
    expect(rejection.code).toBe('INVALID_ROUTE_OVERRIDE');
    expect(rejection.message).toMatch(/zoom 0 is below what the model Buildings takes \(zoom 17 or more/);
  });

  it.each([
    ['a zoom of 16 for Buildings', { zoom: 16 }, /zoom 16 is below what the model Buildings takes/],
    ['a source whose zoom is 12', { source: { dataProvider: { providerName: 'arcgis_world_imagery', zoom: 12 } } }, /zoom 12 is below/],
    ['a model whose lowest zoom is above the route\'s', { model: '🌲 Forest', zoom: 16 }, /model Forest takes \(zoom 17 or more/],
    ['Roads at zoom 10', { model: 'Roads', zoom: 10 }, /model Roads takes/],
  ])('refuses %s', (_label, member, message) => {
    // Act
    const rejection = rejectionOf(() => applyOverrides(route, member));

    // Assess
    expect(rejection.code).toBe('INVALID_ROUTE_OVERRIDE');
    expect(rejection.message).toMatch(message);
  });

  it.each([
    ['the lowest zoom of Buildings', '🏠 Buildings', 17],
    ['zoom 22 (Mapflow refuses only beyond 0-22 above the model\'s lowest)', '🏠 Buildings', 22],
    ['Forest at 17 (the lowest any published table gives)', '🌲 Forest and trees', 17],
    ['the aerial model, in no current table: left to Mapflow', '🏠⭐️ Buildings (Aerial)', 5],
    ['a custom model by id: left to Mapflow', '2d4f6e7a-1111-2222-3333-444455556666', 3],
  ])('accepts %s', (_label, model, zoom) => {
    // Act
    const result = applyOverrides(route, { model, zoom });

    // Assess
    expect(result.source).toEqual({ dataProvider: { providerName: 'mapbox', zoom } });
  });
});
