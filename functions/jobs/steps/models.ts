/**
 * Finding the model a route names among the models of the account.
 *
 * Routes may name a model by id or by name, and names are written with or
 * without their emoji ("🏠 Buildings" or "Buildings"), in any case. An exact
 * id or name wins over a lenient name match.
 */
import { InputRejected } from '../../core/errors.ts';
import { printable } from '../../storage/describe.ts';

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
