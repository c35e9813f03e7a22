/**
 * Dissolves polygons into one valid geometry. Neighbourhood and parcel maps
 * share edges; listed side by side in a MultiPolygon they make an invalid
 * geometry (parts of a MultiPolygon may touch only at points), and overlaps
 * would be paid for twice.
 *
 * Bounded by construction (@turf/union, i.e. polyclip-ts, does the geometry):
 * polygons whose boxes touch no other box are kept
 * as they are (no union needed); the others are merged in small batches,
 * layer by layer (never one call with every polygon as an argument, which
 * overflows the stack with a few hundred thousand polygons, and no recursion
 * over the input), within a budget of CPU time.
 */
import { featureCollection, multiPolygon } from '@turf/helpers';
import { union } from '@turf/union';
import type { MultiPolygon, Polygon, Position } from 'geojson';
import { checkDeadline, type DecodeDeadline } from '../core/deadline.ts';
import { InputRejected } from '../core/errors.ts';
import { boxOf, type Box } from './box.ts';
import { countCrossings } from './crossings.ts';

/** Polygons merged by one polyclip-ts call. */
export const DISSOLVE_BATCH = 32;

/**
 * Most CPU time the dissolve may take, ms: CPU, not wall time, so that a
 * file's fate does not depend on how busy the machine is (on a loaded
 * machine the README's samples were refused by a wall-clock budget). The
 * Plan Processing Lambda has 120 s at 1024 MB (about 0.6 of a vCPU: 20 s of
 * CPU is about 35 s of wall time there); accepted inputs take a few seconds.
 */
export const DISSOLVE_BUDGET_MS = 20_000;

/**
 * CPU time of this thread, ms (Node's thread clock where it has one: other
 * threads of a local bridge do not spend this budget; else the process's).
 */
export function cpuTimeMs(): number {
  const threadCpuUsage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;
  const usage = typeof threadCpuUsage === 'function' ? threadCpuUsage.call(process) : process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * Most edge crossings (points where a union must split edges) among the
 * polygons merged in one file. A union call cannot be interrupted, so its
 * work is bounded before it starts: the worst measured shape (interlocking
 * combs, every tooth crossed by every other) costs about 0.5 ms and 5 KB per
 * crossing, so 50,000 stay within the Plan Processing function's time and
 * memory with a 2x margin; 2,500 overlapping squares cross 39,004 times.
 */
export const MAX_CROSSINGS = 50_000;

/** Most segment pairs the crossing count compares (a sweep: about 0.1 s per million). */
export const MAX_CROSSING_PAIRS = 20_000_000;

export interface DissolveOptions {
  /** CPU time, ms; default DISSOLVE_BUDGET_MS. */
  budgetMs?: number;
  /** For messages, e.g. 'feature 3' or 'the file'. */
  label?: string;
  /** The step's wall-clock deadline (core/deadline.ts), checked between union calls as the CPU budget is. */
  deadline?: DecodeDeadline;
}

type Rings = Position[][];

/**
 * @throws InputRejected GEOMETRY_TOO_COMPLEX when the budget runs out,
 *   INVALID_GEOMETRY when the polygons cannot be merged
 */
export function dissolvePolygons(polygons: Rings[], options: DissolveOptions = {}): Polygon | MultiPolygon {
  if (polygons.length === 1) return { type: 'Polygon', coordinates: polygons[0]! };
  const deadline = cpuTimeMs() + (options.budgetMs ?? DISSOLVE_BUDGET_MS);
  const label = options.label ?? 'the polygons';

  const kept: Rings[] = [];
  const result: Rings[] = [];
  const groups = touchingGroups(polygons);
  checkCrossings(groups.filter((group) => group.length > 1).flat(), label);
  try {
    for (const group of groups) {
      if (group.length === 1) {
        kept.push(group[0]!);
        continue;
      }
      result.push(...unionInBatches(group, deadline, label, options.deadline));
    }
  } catch (error) {
    if (error instanceof InputRejected) throw error;
    throw new InputRejected(
      'INVALID_GEOMETRY',
      `${label} could not be merged into one geometry (${error instanceof Error ? error.message : String(error)}): repair the polygons, e.g. with "Fix geometries" in QGIS`,
      { cause: error },
    );
  }
  const all = [...kept, ...result];
  if (all.length === 0) throw new InputRejected('INVALID_GEOMETRY', `the union of ${label} is empty`);
  return all.length === 1 ? { type: 'Polygon', coordinates: all[0]! } : { type: 'MultiPolygon', coordinates: all };
}

/**
 * The crossings of every polygon that will be merged, counted before any
 * union (the budget above is only checked between union calls).
 * @throws InputRejected GEOMETRY_TOO_COMPLEX
 */
function checkCrossings(merged: Rings[], label: string): void {
  if (merged.length < 2) return;
  const count = countCrossings(merged, MAX_CROSSINGS, MAX_CROSSING_PAIRS);
  if (!count.stopped) return;
  const what = count.crossings > MAX_CROSSINGS ? `their edges cross more than ${MAX_CROSSINGS.toLocaleString('en-US')} times` : `their edges overlap in more than ${MAX_CROSSING_PAIRS.toLocaleString('en-US')} pairs`;
  throw new InputRejected(
    'GEOMETRY_TOO_COMPLEX',
    `${label} cannot be merged within the bridge's limits: ${what} (the work of a union grows with the crossings). ` +
      'Merge them in a GIS first ("Dissolve") and simplify them (e.g. mapshaper -simplify), or split them into several files',
    { details: { crossings: count.crossings, pairs: count.pairs, maxCrossings: MAX_CROSSINGS, maxPairs: MAX_CROSSING_PAIRS } },
  );
}

/** Unions one group layer by layer, DISSOLVE_BATCH at a time, checking the CPU deadline between calls. */
function unionInBatches(group: Rings[], deadline: number, label: string, stepDeadline?: DecodeDeadline): Rings[] {
  let layer: Position[][][][] = group.map((rings) => [rings]);
  while (layer.length > 1) {
    const next: Position[][][][] = [];
    for (let i = 0; i < layer.length; i += DISSOLVE_BATCH) {
      const batch = layer.slice(i, i + DISSOLVE_BATCH);
      next.push(batch.length === 1 ? batch[0]! : unionOf(batch));
      checkDeadline(
        stepDeadline,
        `merging ${label} (${group.length} touching or overlapping polygons)`,
        'Simplify the polygons (e.g. QGIS "Simplify" or mapshaper -simplify), merge them in a GIS first ("Dissolve"), or split the file into several files',
      );
      if (cpuTimeMs() > deadline) {
        throw new InputRejected(
          'GEOMETRY_TOO_COMPLEX',
          `merging ${label} (${group.length} touching or overlapping polygons) takes longer than the bridge allows: ` +
            'simplify the polygons (e.g. QGIS "Simplify" or mapshaper -simplify), merge them in a GIS first ("Dissolve"), or split the file into several files',
          { details: { polygons: group.length } },
        );
      }
    }
    layer = next;
  }
  return layer[0] ?? [];
}

/** One @turf/union call over a batch (each member a MultiPolygon's coordinates). */
function unionOf(batch: Position[][][][]): Position[][][] {
  const merged = union(featureCollection(batch.map((coordinates) => multiPolygon(coordinates))));
  if (!merged) return [];
  return merged.geometry.type === 'Polygon' ? [merged.geometry.coordinates] : merged.geometry.coordinates;
}

/**
 * Groups of polygons whose boxes touch, transitively (union-find over a
 * sweep along longitude). Polygons sorted by west edge; each is compared with
 * the following ones whose west edge lies within its box.
 */
function touchingGroups(polygons: Rings[]): Rings[][] {
  const boxes = polygons.map((rings) => boxOf([rings[0]!]));
  const order = polygons.map((_, i) => i).sort((a, b) => boxes[a]![0] - boxes[b]![0]);
  const parent = polygons.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  for (let a = 0; a < order.length; a++) {
    const p = boxes[order[a]!]!;
    for (let b = a + 1; b < order.length; b++) {
      const q = boxes[order[b]!]!;
      if (q[0] > p[2]) break;
      if (q[1] <= p[3] && q[3] >= p[1]) parent[find(order[a]!)] = find(order[b]!);
    }
  }
  const groups = new Map<number, Rings[]>();
  for (const i of order) {
    const root = find(i);
    const group = groups.get(root);
    if (group) group.push(polygons[i]!);
    else groups.set(root, [polygons[i]!]);
  }
  return [...groups.values()];
}

