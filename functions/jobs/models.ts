/**
 * Finding the model a route names among the models of the account.
 *
 * Routes may name a model by id or by name, and names are written with or
 * without their emoji ("🏠 Buildings" or "Buildings"), in any case. An exact
 * id or name wins over a lenient name match.
 */
import { InputRejected } from '../core/errors.ts';
import { printable } from '../storage/describe.ts';

export interface AccountModel {
  id: string;
  name: string;
  pricePerSqKm?: number;
  blocks?: { name: string; displayName?: string; optional?: boolean; price?: number }[];
}

/** A model name reduced to its words: no emoji or symbols, lower case, single spaces. */
export function normaliseModelName(name: string): string {
  return name
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}()]+/gu, ' ')
    .trim()
    .toLowerCase();
}

/**
 * @throws InputRejected UNKNOWN_MODEL listing the models the account has
 */
export function resolveModel<M extends AccountModel>(models: readonly M[], wanted: string): M {
  const exact = models.find((m) => m.id === wanted || m.name === wanted);
  if (exact) return exact;
  const key = normaliseModelName(wanted);
  const lenient = models.filter((m) => normaliseModelName(m.name) === key);
  if (lenient.length === 1) return lenient[0]!;
  const available = models.map((m) => `'${m.name}'`).join(', ') || '(none)';
  const why = lenient.length > 1 ? 'matches more than one model; use the model id' : 'is not available to this Mapflow account';
  throw new InputRejected('UNKNOWN_MODEL', `model '${printable(wanted)}' ${why}. Available models: ${available}. Set the route's "model" (or the file's "mapflow.model") to one of them.`);
}

/**
 * Checks the requested blocks against the model's blocks: an unknown block name
 * is a typo that Mapflow would silently ignore or reject later.
 * @throws InputRejected INVALID_ROUTE_OVERRIDE naming the bad block
 */
export function checkBlocks(model: AccountModel, blocks: readonly { name: string; enabled: boolean }[] | undefined): void {
  if (!blocks?.length || !model.blocks) return;
  const known = new Map(model.blocks.flatMap((b) => [[b.name.toLowerCase(), b.name], [(b.displayName ?? b.name).toLowerCase(), b.name]]));
  for (const block of blocks) {
    if (!known.has(block.name.toLowerCase())) {
      const names = model.blocks.map((b) => `'${b.name}'`).join(', ') || '(none)';
      throw new InputRejected('INVALID_ROUTE_OVERRIDE', `block '${printable(block.name)}' is not a block of model '${model.name}'. Its blocks are: ${names}.`);
    }
  }
}

/**
 * The blocks to send: every optional block of the model by its API `name`,
 * with `enabled` set, as Geoalert's plugin sends them (mapflow-qgis
 * mapflow/schema/workflow_def.py lines 51-57, `get_enabled_blocks`: one
 * `{name, enabled}` per optional block, mandatory ones left out). A route may
 * name a block by its display name; the server knows the API name only, so a
 * display name forwarded as written would silently not apply. A block the
 * route does not mention is sent disabled (the plugin's unticked box), never
 * left to a server default the estimate did not see. Without a block list
 * from the account, the route's blocks go as written.
 * @throws InputRejected INVALID_ROUTE_OVERRIDE for an unknown block, or a mandatory one disabled
 */
export function explicitBlocks(model: AccountModel, requested: readonly { name: string; enabled: boolean }[] | undefined): { name: string; enabled: boolean }[] | undefined {
  if (!model.blocks) return requested?.length ? requested.map((b) => ({ name: b.name, enabled: b.enabled })) : undefined;
  checkBlocks(model, requested);
  const wanted = new Map<string, boolean>();
  for (const block of requested ?? []) {
    const known = model.blocks.find((b) => b.name.toLowerCase() === block.name.toLowerCase())
      ?? model.blocks.find((b) => (b.displayName ?? b.name).toLowerCase() === block.name.toLowerCase())!;
    if (known.optional === false && !block.enabled) {
      throw new InputRejected('INVALID_ROUTE_OVERRIDE', `block '${known.name}' of model '${model.name}' is always on and cannot be disabled; remove it from the route's "blocks".`);
    }
    wanted.set(known.name, block.enabled);
  }
  const optional = model.blocks.filter((b) => b.optional !== false);
  return optional.length ? optional.map((b) => ({ name: b.name, enabled: wanted.get(b.name) ?? false })) : undefined;
}
