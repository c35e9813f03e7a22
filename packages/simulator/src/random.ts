/**
 * Seeded randomness. Every random choice of the simulator (faults, results,
 * catalog) comes from one of these generators so that a run with the same seed
 * repeats exactly.
 */
import { createHash } from 'node:crypto';

/** A generator of floats in [0, 1) (mulberry32: small, fast, good enough for simulation). */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit seed derived from any strings (e.g. the simulator seed and a processing id). */
export function seedFrom(...parts: Array<string | number>): number {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return digest.readUInt32BE(0);
}

/** Random helpers over a generator. */
export function between(random: Random, min: number, max: number): number {
  return min + (max - min) * random();
}

export function integerBetween(random: Random, min: number, max: number): number {
  return Math.floor(between(random, min, max + 1));
}

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.min(items.length - 1, Math.floor(random() * items.length))]!;
}

/** A UUID-formatted identifier drawn from a generator (stable ids for generated objects). */
export function seededUuid(random: Random): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[Math.floor(random() * 4)]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
