/**
 * Cost in credits: area in km² (1 km² at least) times the model's price per
 * km² plus the prices of its enabled blocks, rounded up to whole credits.
 */
import { badRequest } from './http.ts';
import type { Model } from './catalogue.ts';

export interface BlockChoice {
  name: string;
  enabled: boolean;
}

/**
 * The model's blocks with their enabled state: mandatory blocks are always on,
 * optional ones only when the request enables them.
 */
export function resolveBlocks(model: Model, requested: unknown, live = false): BlockChoice[] {
  const blocks = model.blocks ?? [];
  const choices = new Map<string, boolean>(blocks.map((b) => [b.name, !b.optional]));
  if (requested === undefined || requested === null) return blocks.map((b) => ({ name: b.name, enabled: choices.get(b.name)! }));
  if (!Array.isArray(requested)) throw badRequest('blocks must be an array of {name, enabled}');
  for (const item of requested) {
    if (typeof item !== 'object' || item === null || typeof (item as { name?: unknown }).name !== 'string') {
      throw badRequest('each block must be {name: string, enabled: boolean}');
    }
    const { name, enabled } = item as { name: string; enabled?: unknown };
    // The live service (--real-shapes) knows a block by its API name only: Geoalert's plugin always sends
    // `name` (mapflow-qgis mapflow/schema/workflow_def.py lines 51-57). A display name, or any other
    // name, does not apply there and is not refused: the charge then differs from what the client meant.
    const block = live
      ? blocks.find((b) => b.name === name)
      : blocks.find((b) => b.name.toLowerCase() === name.toLowerCase() || b.displayName.toLowerCase() === name.toLowerCase());
    if (!block && live) continue;
    if (!block) throw badRequest(`Model '${model.name}' has no block '${name}'`, { block: name, blocks: blocks.map((b) => b.name) });
    const on = enabled === undefined ? true : enabled === true || enabled === 'true';
    if (!on && !block.optional) throw badRequest(`Block '${block.name}' of model '${model.name}' cannot be disabled`, { block: block.name });
    choices.set(block.name, on);
  }
  return blocks.map((b) => ({ name: b.name, enabled: choices.get(b.name)! }));
}

/**
 * `sourcePricePerSqKm`: with `--real-shapes`, the data provider's price
 * (`dataProviders[].price` of /user/status): the server prices with the
 * source, and Geoalert's plugin posts the whole create body to the cost call
 * (mapflow-qgis functional/api/processing_api.py lines 93-99), so a cost call
 * without `params` is cheaper than the processing it stands for.
 */
export function costOf(model: Model, areaSqM: number, blocks: BlockChoice[], sourcePricePerSqKm = 0): number {
  const billedKm2 = Math.max(1, areaSqM / 1e6);
  const blockPrice = blocks
    .filter((choice) => choice.enabled)
    .reduce((sum, choice) => sum + (model.blocks?.find((b) => b.name === choice.name)?.price ?? 0), 0);
  const exact = billedKm2 * (model.pricePerSqKm + blockPrice + sourcePricePerSqKm);
  // Round away floating-point noise (5.0000000001) before rounding up.
  return Math.ceil(Math.round(exact * 1e6) / 1e6);
}
